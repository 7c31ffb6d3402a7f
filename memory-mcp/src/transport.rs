//! The stdio transport: newline-delimited JSON-RPC, each request at most [`MAX_REQUEST_BYTES`] long.
//!
//! rmcp's own line transport stays silent on a line that is not JSON and drops an over-long line without a reply
//! (the client then waits for ever). This one answers both, as JSON-RPC 2.0 says, and keeps serving:
//! - a line that is not JSON: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`;
//! - JSON that is not a JSON-RPC message: `-32600` (Invalid Request), with the request's `id` when it has one;
//! - a line longer than the limit: `-32600` with the request's `id` (read from the part that was kept), after
//!   which the rest of the line is read and thrown away: at most [`MAX_REQUEST_BYTES`] of it are ever held.
//!
//! End of input ends the session (rmcp then answers the calls still running and stops); a last line without a
//! final newline is still read.
//!
//! `receive` is polled inside rmcp's `select!` and may be dropped at any await point, so a partly read line lives
//! in the struct and bytes move from the reader's buffer to it with no await in between. Replies of the transport
//! itself are written by spawned tasks that take the same writer lock as `send`, so lines never interleave, and
//! `close` waits for them.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

/// The longest request line accepted, in bytes, without its newline: 4 MiB.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC: the line is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a request (also used for a request over the size limit).
const INVALID_REQUEST: i64 = -32600;

/// A size-capped, newline-delimited JSON-RPC transport for the server side, over any reader and writer.
pub(crate) struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    max_line: usize,
    /// The line read so far (never more than `max_line` bytes).
    line: Vec<u8>,
    /// Set while the rest of an over-long line is being thrown away.
    discarding: bool,
    /// Replies of the transport itself still being written.
    replies: Vec<JoinHandle<()>>,
}

impl<R, W> std::fmt::Debug for LineTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineTransport")
            .field("max_line", &self.max_line)
            .field("buffered", &self.line.len())
            .field("discarding", &self.discarding)
            .finish_non_exhaustive()
    }
}

/// What the reader found.
enum Read {
    /// A whole line is in `self.line`.
    Line,
    /// End of input, nothing left.
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading requests from `reader` and writing to `writer`, refusing lines over `max_line` bytes.
    pub(crate) fn new(reader: R, writer: W, max_line: usize) -> LineTransport<R, W> {
        LineTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(writer)),
            max_line,
            line: Vec::new(),
            discarding: false,
            replies: Vec::new(),
        }
    }

    /// Writes a reply of the transport itself without awaiting it here (`receive` must stay cancel-safe).
    fn reply(&mut self, message: &Value) {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        let writer = Arc::clone(&self.writer);
        self.replies.retain(|reply| !reply.is_finished());
        self.replies.push(tokio::spawn(async move {
            let mut writer = writer.lock().await;
            if writer.write_all(&bytes).await.is_ok() {
                let _ = writer.flush().await;
            }
        }));
    }

    fn error(&mut self, id: Option<Value>, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({ "code": code, "message": message });
        if let (Some(data), Value::Object(map)) = (data, &mut error) {
            map.insert("data".into(), data);
        }
        self.reply(&json!({ "jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": error }));
    }

    /// Reads up to the next newline into `self.line`, never holding more than `max_line` bytes of it.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                if self.discarding || self.line.is_empty() {
                    self.discarding = false;
                    return Ok(Read::End);
                }
                return Ok(Read::Line);
            }
            let newline = buffer.iter().position(|b| *b == b'\n');
            let take = newline.map_or(buffer.len(), |at| at + 1);
            let content = newline.unwrap_or(buffer.len());
            let mut over = false;
            if !self.discarding {
                let room = self.max_line.saturating_sub(self.line.len());
                if content > room {
                    self.line.extend_from_slice(buffer.get(..room).unwrap_or_default());
                    over = true;
                } else {
                    self.line.extend_from_slice(buffer.get(..content).unwrap_or_default());
                }
            }
            self.reader.consume(take);
            if over {
                let id = top_level_id(&self.line);
                self.line.clear();
                self.discarding = newline.is_none();
                let message = format!("request larger than {} bytes", self.max_line);
                self.error(id, INVALID_REQUEST, &message, Some(json!({ "maxBytes": self.max_line })));
                continue;
            }
            if newline.is_some() {
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                return Ok(Read::Line);
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Serialized now, written later: the future must not borrow the transport.
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        let writer = Arc::clone(&self.writer);
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let mut writer = writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::End) | Err(_) => return None,
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\r").unwrap_or(&line).trim_ascii();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(message) => return Some(message),
                Err(e) if e.is_syntax() || e.is_eof() => self.error(None, PARSE_ERROR, "Parse error", None),
                Err(e) => {
                    // JSON, but not a JSON-RPC message. A notification (a method and no id) gets no reply.
                    let value: Value = serde_json::from_slice(text).unwrap_or(Value::Null);
                    let id = value.get("id").filter(|id| is_request_id(id)).cloned();
                    let notification = id.is_none() && value.get("method").is_some_and(Value::is_string);
                    if !notification {
                        self.error(id, INVALID_REQUEST, &format!("Invalid Request: {e}"), None);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        for reply in std::mem::take(&mut self.replies) {
            let _ = reply.await;
        }
        self.writer.lock().await.shutdown().await
    }
}

/// A JSON-RPC request id: a string or an integer.
fn is_request_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The top-level `"id"` of a JSON object that may be cut short, read without parsing the values it skips.
fn top_level_id(prefix: &[u8]) -> Option<Value> {
    let mut scanner = Scanner { bytes: prefix, at: 0 };
    scanner.skip_space();
    scanner.expect(b'{')?;
    loop {
        scanner.skip_space();
        let key = scanner.string()?;
        scanner.skip_space();
        scanner.expect(b':')?;
        scanner.skip_space();
        let start = scanner.at;
        scanner.value()?;
        if key == b"\"id\"" {
            let raw = prefix.get(start..scanner.at)?;
            let id: Value = serde_json::from_slice(raw).ok()?;
            return is_request_id(&id).then_some(id);
        }
        scanner.skip_space();
        scanner.expect(b',')?;
    }
}

/// A cursor over JSON bytes that can skip strings and whole values.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string, quotes included; `None` when it is cut short.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at);
                }
                _ => self.at += 1,
            }
        }
    }

    /// One value of any kind; `None` when it is cut short.
    fn value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                // The end of a value at the top: the next member, or the end of the object around it.
                b',' | b'}' | b']' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0 && matches!(self.bytes.get(self.at.wrapping_sub(1)), Some(b'"' | b'}' | b']')) {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::top_level_id;

    #[test]
    fn the_id_of_a_request_cut_short() {
        let cut = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"content":"aaaa"#;
        assert_eq!(top_level_id(cut), Some(json!(7)));
        let nested = br#"{"method":"x","params":{"id":1,"s":"}\"{"},"id":"abc","params2":"#;
        assert_eq!(top_level_id(nested), Some(json!("abc")));
        let none = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"content":"aaaa"#;
        assert_eq!(top_level_id(none), None);
        assert_eq!(top_level_id(b"[1,2]"), None);
        assert_eq!(top_level_id(br#"{"id":1.5,"#), None);
        assert_eq!(top_level_id(br#"{"id" : "x" }"#), Some(json!("x")));
    }
}
