"""What the tests share: the running Vigil they are pointed at (scripts/python-client.test.ts
starts observe and the gate and sets the environment), a run-unique session id prefix, and reads
of what observe stored."""

from __future__ import annotations

import json
import os
import threading
import time
import unittest
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Optional, Type, TypeVar

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OBSERVE_URL = os.environ.get("VIGIL_URL", "")
OBSERVE_KEY = os.environ.get("VIGIL_API_KEY", "")
GATE_URL = os.environ.get("VIGIL_GATE_URL", "")
GATE_KEY = os.environ.get("VIGIL_GATE_API_KEY", "")
GATE_ADMIN_KEY = os.environ.get("VIGIL_GATE_ADMIN_KEY", "")
#: Every session id a test writes starts with it, so the node test can find them.
PREFIX = os.environ.get("VIGIL_TEST_PREFIX", f"py-{int(time.time() * 1000)}")

needs_vigil = unittest.skipUnless(
    OBSERVE_URL and OBSERVE_KEY and GATE_URL and GATE_KEY and GATE_ADMIN_KEY,
    "VIGIL_URL, VIGIL_API_KEY, VIGIL_GATE_URL, VIGIL_GATE_API_KEY and VIGIL_GATE_ADMIN_KEY name a running Vigil (npm test sets them)",
)

T = TypeVar("T")


def observe_get(path: str, **query: Any) -> Any:
    """A GET against observe with the test key, independent of the client under test."""
    url = OBSERVE_URL.rstrip("/") + path + ("?" + urllib.parse.urlencode(query) if query else "")
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {OBSERVE_KEY}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def stored_events(session_id: str) -> List[Dict[str, Any]]:
    """The session's events as observe stored them, oldest first."""
    return list(observe_get("/api/events", sessionId=session_id, order="asc", limit=500)["events"])


def eventually(probe: Callable[[], T], accept: Callable[[T], bool], timeout: float = 10.0) -> T:
    """Polls ``probe`` until ``accept`` likes its answer; fails with the last answer after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {timeout} s; last value: {value!r}")
        time.sleep(0.05)


def session_id(name: str, suffix: Optional[str] = None) -> str:
    return f"{PREFIX}-{name}" + (f"-{suffix}" if suffix else "")


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing (the test output stays the tests')."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LocalServer:
    """A real HTTP server on 127.0.0.1 (``port`` 0: an ephemeral one) serving ``handler`` from a thread."""

    def __init__(self, handler: Type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def reply_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: Optional[Mapping[str, str]] = None) -> None:
    """Answers the handler's request with ``body`` as JSON (bytes: already encoded)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
