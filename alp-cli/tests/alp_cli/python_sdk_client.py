"""A client of the official MCP Python SDK (`mcp` >= 2.3) against `alp mcp` or `alp serve`, for `eras.rs`.

Usage: python python_sdk_client.py '<JSON>' where the JSON names
  mode       "auto" (probe server/discover, fall back to initialize), "2026-07-28" (stateless only) or
             "legacy" (the initialize handshake, 2025-11-25);
  stdio      {"command", "args", "env", "cwd"} to start `alp --as ROLE mcp`, or
  http       {"url", "token"} of a running `alp serve`;
  query, id  what to search for and which entry to get.

It lists the tools, calls memory_search and memory_get, and prints one JSON document on stdout: the negotiated
protocol version, how the session opened, the server's name, the tools in order with the list's caching hints, and
both calls' results.
"""

import asyncio
import importlib.metadata
import json
import sys

import httpx2
import mcp
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def result_of(result):
    return {
        "isError": bool(result.is_error),
        "structured": result.structured_content,
        "text": [block.text for block in result.content if getattr(block, "type", None) == "text"],
    }


async def run(spec):
    if "stdio" in spec:
        stdio = spec["stdio"]
        params = StdioServerParameters(
            command=stdio["command"], args=stdio["args"], env=stdio["env"], cwd=stdio["cwd"]
        )
        transport = stdio_client(params)
    else:
        http = spec["http"]
        client = httpx2.AsyncClient(headers={"Authorization": "Bearer " + http["token"]}, timeout=30)
        transport = streamable_http_client(http["url"], http_client=client, terminate_on_close=False)
    async with mcp.Client(transport, mode=spec["mode"], read_timeout_seconds=30) as client:
        session = client.session
        listed = await client.list_tools(cache_mode="bypass")
        search = await client.call_tool("memory_search", {"query": spec["query"]})
        got = await client.call_tool("memory_get", {"id": spec["id"]})
        denied = await client.call_tool("memory_get", {"id": spec["denied"]})
        return {
            "sdk": importlib.metadata.version("mcp"),
            "protocolVersion": client.protocol_version,
            "discovered": session.discover_result is not None,
            "initialized": session.initialize_result is not None,
            "serverName": client.server_info.name if client.server_info else None,
            "tools": [tool.name for tool in listed.tools],
            "ttlMs": listed.ttl_ms,
            "cacheScope": listed.cache_scope,
            "search": result_of(search),
            "get": result_of(got),
            "denied": result_of(denied),
        }


def main():
    spec = json.loads(sys.argv[1])
    print(json.dumps(asyncio.run(run(spec))))


if __name__ == "__main__":
    main()
