"""A stand-in web service for launcher and gateway tests (standard library only).

Run as ``python -m fake_service --host H --port P`` with ``FAKE_NAME`` set. It answers
``/health``, ``/ready`` and ``/openapi.json`` like a real service, and every other path
with JSON naming itself, the port it listens on (which replica), the path it saw and the
headers the gateway sent, so tests can check the route table and forwarding headers
without the real services.
``FAKE_CRASH=1`` makes it exit with code 3 right away, as does ``FAKE_CRASH_IF=PATH``
when ``PATH`` exists (a test creates it to make the next restart fail). ``python -m
fake_service command ARGS ...`` (a service's operator command, as ``deploy.local exec``
runs it) prints its arguments, working directory, standard input and environment as
JSON, and exits with the code given as ``--exit N`` (default 0).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn behind the gateway

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        name = os.environ.get("FAKE_NAME", "fake")
        if self.path in ("/health", "/ready"):
            self._send(200, b"ok", "text/plain")
        elif self.path == "/openapi.json":
            self._send(200, json.dumps({"openapi": "3.1.0", "info": {"title": name}}).encode())
        else:
            seen = {
                "service": name,
                "port": int(self.connection.getsockname()[1]),
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body_length": len(body),
                "env": {k: os.environ.get(k) for k in ("SERVICE_CLIENT_ID", "REDIS_NAMESPACE")},
            }
            self._send(200, json.dumps(seen).encode())

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output quiet


def command(args: list[str]) -> None:
    seen = {"args": args, "cwd": os.getcwd(), "stdin": sys.stdin.read(), "env": dict(os.environ)}
    sys.stdout.write(json.dumps(seen) + "\n")
    sys.exit(int(args[args.index("--exit") + 1]) if "--exit" in args else 0)


def main() -> None:
    if sys.argv[1:2] == ["command"]:
        command(sys.argv[2:])
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    crash_if = os.environ.get("FAKE_CRASH_IF")
    if os.environ.get("FAKE_CRASH") or (crash_if and os.path.exists(crash_if)):
        sys.stdout.write("fake service: crashing on purpose\n")
        sys.exit(3)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    sys.stdout.write(f"fake service {os.environ.get('FAKE_NAME')} listening on {args.port}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
