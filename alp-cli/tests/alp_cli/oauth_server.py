"""A small OAuth 2.1 authorization server on Authlib, for the end-to-end tests of `alp serve --oauth-issuer`
(`oauth.rs`), and a minter of the hostile tokens those tests send.

    python oauth_server.py serve SPEC   # SPEC: {"dir","cert","key","clients":[{"id","secret","alg","role"}],
                                        #        "resource","roleClaim","kids":{"RS256","ES256"},"jwks":"ok|huge|hang"}
    python oauth_server.py mint SPEC    # SPEC: {"keys","alg","kid","claims","header",
                                        #        "sign":"key|none|hs256-public|other"}
    python oauth_server.py token SPEC   # SPEC: {"issuer","ca","client","secret","resource"}

`serve` makes an RSA and an EC P-256 key, writes them (private) to DIR/keys.json for `mint`, serves over HTTPS
(the test's certificate) RFC 8414 metadata at /.well-known/oauth-authorization-server, the public JWKS at /jwks
and a client-credentials token endpoint at /token that issues RFC 9068 JWT access tokens (Authlib's
JWTBearerTokenGenerator): `aud` is the RFC 8707 `resource` parameter of the request (else SPEC's resource), the
role claim names the client's role, and each client's tokens are signed with its alg. Once listening it prints
{"issuer": URL} on one line. `jwks: "huge"` serves a 2 MiB JWKS, `"hang"` one that never answers.
"""

import json
import os
import ssl
import sys
import threading
import time

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from flask import Flask, Response, jsonify, request
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey
from werkzeug.serving import make_server


class Client(ClientMixin):
    def __init__(self, spec):
        self.spec = spec

    def get_client_id(self):
        return self.spec["id"]

    def get_default_redirect_uri(self):
        return None

    def get_allowed_scope(self, scope):
        return scope or ""

    def check_redirect_uri(self, redirect_uri):
        return False

    def check_client_secret(self, client_secret):
        return client_secret == self.spec["secret"]

    def check_endpoint_auth_method(self, method, endpoint):
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type):
        return False

    def check_grant_type(self, grant_type):
        return grant_type == "client_credentials"


class Generator(JWTBearerTokenGenerator):
    """Signs each client's tokens with the key of its alg, and names its role."""

    def __init__(self, issuer, keys, spec):
        super().__init__(issuer=issuer)
        self.keys = keys
        self.spec = spec

    def get_jwks(self):
        return KeySet([key for key in self.keys if key.alg == self.alg]).as_dict(private=True)

    def get_audiences(self, client, user, scope):
        return request.form.get("resource") or self.spec["resource"]

    def get_extra_claims(self, client, grant_type, user, scope):
        return {self.spec.get("roleClaim", "alp_role"): client.spec["role"]}

    def access_token_generator(self, client, grant_type, user, scope):
        self.alg = client.spec.get("alg", "RS256")
        return super().access_token_generator(client, grant_type, user, scope)


def serve(spec):
    kids = spec.get("kids", {})
    keys = [
        RSAKey.generate_key(2048, {"kid": kids.get("RS256", "rsa-1"), "alg": "RS256", "use": "sig"}),
        ECKey.generate_key("P-256", {"kid": kids.get("ES256", "ec-1"), "alg": "ES256", "use": "sig"}),
    ]
    with open(os.path.join(spec["dir"], "keys.json"), "w") as out:
        json.dump(KeySet(keys).as_dict(private=True), out)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(spec["cert"], spec["key"])
    app = Flask("alp-test-authorization-server")
    clients = {client["id"]: Client(client) for client in spec["clients"]}
    server = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=context)
    issuer = f"https://127.0.0.1:{server.server_port}"

    authorization = AuthorizationServer(
        app, query_client=clients.get, save_token=lambda token, request: None
    )
    authorization.register_grant(ClientCredentialsGrant)
    authorization.register_token_generator("client_credentials", Generator(issuer, keys, spec))

    @app.get("/.well-known/oauth-authorization-server")
    def metadata():
        return jsonify(
            {
                "issuer": issuer,
                "token_endpoint": f"{issuer}/token",
                "jwks_uri": f"{issuer}/jwks",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            }
        )

    @app.get("/jwks")
    def jwks():
        mode = spec.get("jwks", "ok")
        if mode == "hang":
            time.sleep(3600)
        if mode == "huge":
            filler = [{"kty": "oct", "kid": f"pad-{i}", "k": "A" * 1000} for i in range(2100)]
            return jsonify({"keys": filler + KeySet(keys).as_dict(private=False)["keys"]})
        return jsonify(KeySet(keys).as_dict(private=False))

    @app.post("/token")
    def token():
        return authorization.create_token_response()

    print(json.dumps({"issuer": issuer}), flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Ends with its parent: the test closes stdin (or is killed).
    sys.stdin.read()


def b64(data):
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(spec):
    """A token as SPEC says: signed with the key of `kid` in `keys` (or another key of the same kid: `other`), not
    signed (`none`), or HS256 with the RSA public key's PEM as the secret (`hs256-public`)."""
    import hashlib
    import hmac

    with open(spec["keys"]) as source:
        keys = KeySet.import_key_set(json.load(source))
    alg = spec.get("alg", "RS256")
    kid = spec.get("kid", "rsa-1")
    header = {"alg": alg, "typ": "at+jwt", "kid": kid, **spec.get("header", {})}
    claims = spec["claims"]
    sign = spec.get("sign", "key")
    if sign == "none":
        header["alg"] = "none"
        return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}."
    if sign == "hs256-public":
        header["alg"] = "HS256"
        public = keys.get_by_kid(kid).as_pem(private=False)
        message = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
        signature = hmac.new(public, message.encode(), hashlib.sha256).digest()
        return f"{message}.{b64(signature)}"
    if sign == "other":
        key = (RSAKey.generate_key(2048) if alg == "RS256" else ECKey.generate_key("P-256"))
    else:
        key = keys.get_by_kid(kid)
    return jwt.encode(header, claims, key, algorithms=[alg])


def token(spec):
    """A client-credentials grant at the issuer's token endpoint (found in its metadata), over HTTPS verified
    against the test's CA: the access token."""
    import base64
    import urllib.parse
    import urllib.request

    context = ssl.create_default_context(cafile=spec["ca"])
    with urllib.request.urlopen(
        f"{spec['issuer']}/.well-known/oauth-authorization-server", context=context
    ) as answer:
        endpoint = json.load(answer)["token_endpoint"]
    basic = base64.b64encode(f"{spec['client']}:{spec['secret']}".encode()).decode()
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "resource": spec["resource"]})
    post = urllib.request.Request(
        endpoint, data=form.encode(), headers={"Authorization": f"Basic {basic}"}, method="POST"
    )
    with urllib.request.urlopen(post, context=context) as answer:
        return json.load(answer)["access_token"]


if __name__ == "__main__":
    command, spec = sys.argv[1], json.loads(sys.argv[2])
    if command == "serve":
        serve(spec)
    elif command == "token":
        print(token(spec))
    else:
        print(mint(spec))
