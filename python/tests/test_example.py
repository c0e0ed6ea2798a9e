"""examples/python_agent.py when things go wrong (issue 34 item 16): it never claims a session was
stored after events were lost, and a missing key is named in one line, not a traceback. Against a
small real HTTP server standing in for observe and the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Tuple

import vigil
from _support import PACKAGE_ROOT

EXAMPLE = os.path.join(os.path.dirname(PACKAGE_ROOT), "examples", "python_agent.py")

#: POST path -> (status, body): observe refuses the events (the key lacks the ingest scope); the gate approves.
ROUTES: Dict[str, Tuple[int, Any]] = {
    "/api/events": (403, {"error": "This route needs the ingest scope; the key has read", "status": 403}),
    "/api/requests": (201, {"id": "r1", "action": "pay", "status": "approved", "params": {}, "decidedBy": "policy"}),
}


class StandIn:
    """observe and the gate on one port, answering ROUTES, or 401 to a request without a key."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                status, body = ROUTES[self.path] if self.headers.get("authorization") else (401, {"error": "Missing or invalid API key", "status": 401})
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ExampleTest(unittest.TestCase):
    def setUp(self) -> None:
        self.stand_in = StandIn()
        self.addCleanup(self.stand_in.close)

    def run_example(self, **env: str) -> "subprocess.CompletedProcess[str]":
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("VIGIL_")}
        full = {**inherited, "PYTHONPATH": PACKAGE_ROOT, "VIGIL_URL": self.stand_in.url, "VIGIL_GATE_URL": self.stand_in.url, **env}
        return subprocess.run([sys.executable, EXAMPLE], env=full, capture_output=True, text=True, timeout=60)

    def test_lost_events_are_reported_and_no_success_is_claimed(self) -> None:
        result = self.run_example(VIGIL_API_KEY="read-only", VIGIL_GATE_API_KEY="agent")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertNotIn("Stored session", result.stdout)
        self.assertRegex(result.stderr, r"Session \S+: 10 events were not stored \(refused\)")
        self.assertNotIn("Traceback", result.stderr)

    def test_a_missing_gate_key_is_named_without_a_traceback(self) -> None:
        result = self.run_example(VIGIL_API_KEY="observe")
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("VIGIL_GATE_API_KEY", result.stderr)
        self.assertNotIn("VIGIL_API_KEY (", result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(result.stdout, "")

    def test_a_client_without_a_key_names_the_variable_when_refused(self) -> None:
        with self.assertRaises(vigil.VigilAuthenticationError) as raised:
            vigil.GateClient(self.stand_in.url, "").create_request("pay")
        self.assertIn("VIGIL_GATE_API_KEY", str(raised.exception))
        with self.assertRaises(vigil.VigilAuthenticationError) as observe_raised:
            vigil.ObserveClient(self.stand_in.url, "").ingest([{"sessionId": "s"}])
        self.assertIn("VIGIL_API_KEY", str(observe_raised.exception))


if __name__ == "__main__":
    unittest.main()
