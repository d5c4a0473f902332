"""A small OAuth/OIDC provider on loopback for tests of Kafka's secured OAUTHBEARER login and
validator: a token endpoint that answers client-credentials grants with RS256-signed JWTs (sub =
the client id, the requested scope, an audience and a lifetime), and the JWKS of its key in a file.
Brokers (wirekafka's and Kafka's) log in to each other with its tokens; librdkafka clients get
theirs with `sasl.oauthbearer.method=oidc`."""

from __future__ import annotations

import base64
import http.server
import threading
import time
import urllib.parse
from pathlib import Path

from testsupport.jwt_signing import SigningKey, jwks

ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"


class OAuthProvider:
    def __init__(self, directory: Path, clients: dict[str, str], lifetime_s: int = 3600) -> None:
        """clients: client id -> secret, the credentials the endpoint accepts."""
        self.clients = clients
        self.lifetime_s = lifetime_s
        self.key = SigningKey.generate("RS256", "test-provider")
        self.jwks_path = Path(directory) / "jwks.json"
        self.jwks_path.parent.mkdir(parents=True, exist_ok=True)
        self.jwks_path.write_text(jwks(self.key))
        self.issued: list[str] = []  # the client ids tokens went to, in order
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def token_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/token"

    @property
    def jwks_url(self) -> str:
        return f"file:{self.jwks_path}"

    @property
    def allowed_urls_option(self) -> str:
        """The -D option that lets Kafka (and wirekafka) fetch from both URLs."""
        return f"-D{ALLOWED_URLS}={self.jwks_url},{self.token_url}"

    def token(self, client_id: str, scope: str) -> str:
        now = int(time.time())
        return self.key.sign({"sub": client_id, "iat": now, "exp": now + self.lifetime_s, "scope": scope,
                              "aud": "kafka", "iss": "test-provider"})

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
                scheme, _, credentials = (self.headers.get("Authorization") or "").partition(" ")
                client_id, _, secret = base64.b64decode(credentials or "").decode().partition(":")
                if form.get("grant_type") != ["client_credentials"] and form.get("grant_type") is not None:
                    return self._answer(400, b'{"error":"unsupported_grant_type"}')
                if scheme != "Basic" or provider.clients.get(client_id) != secret:
                    return self._answer(401, b'{"error":"invalid_client"}')
                provider.issued.append(client_id)
                token = provider.token(client_id, " ".join(form.get("scope", [""])))
                self._answer(200, ('{"access_token":"%s","token_type":"bearer","expires_in":%d}'
                                   % (token, provider.lifetime_s)).encode())

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> "OAuthProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
