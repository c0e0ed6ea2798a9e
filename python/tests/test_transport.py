"""Retries, Retry-After, timeouts, the bounded queue and typed errors, against small local HTTP
servers (what a real observe cannot be made to do on demand) and the real services."""

from __future__ import annotations

import email.utils
import json
import threading
import time
import unittest
from typing import Any, Callable, List, Optional, Tuple

import vigil
from _support import GATE_ADMIN_KEY, GATE_KEY, LocalServer, QuietHandler, needs_vigil, reply_json

Answer = Tuple[int, dict, Any]

FAST = vigil.RetryPolicy(max_retries=3, base_delay=0.01, max_delay=5, max_retry_time=5)


class FakeServer(LocalServer):
    """A real HTTP server on an ephemeral port answering each request with ``answer(n)`` (n from 0), recording the bodies."""

    def __init__(self, answer: Callable[[int], Optional[Answer]]) -> None:
        self.bodies: List[Any] = []
        self.times: List[float] = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                server.bodies.append(json.loads(self.rfile.read(length)))
                server.times.append(time.monotonic())
                reply = answer(len(server.bodies) - 1)
                if reply is None:
                    return
                status, headers, body = reply
                reply_json(self, status, body, headers)

        super().__init__(Handler)


STORED: Answer = (201, {}, {"ingested": 1, "events": [{"id": "e1", "hash": "h"}]})
EVENT = {"sessionId": "s", "agentId": "a", "eventType": "custom", "payload": {"type": "t", "data": None}}


class RetryTest(unittest.TestCase):
    def serve(self, answer: Callable[[int], Optional[Answer]]) -> FakeServer:
        server = FakeServer(answer)
        self.addCleanup(server.close)
        return server

    def test_a_429_is_retried_after_its_retry_after_seconds(self) -> None:
        server = self.serve(lambda n: (429, {"retry-after": "1"}, {"error": "slow down", "status": 429}) if n == 0 else STORED)
        client = vigil.ObserveClient(server.url, "k", retry=FAST, flush_interval=60)
        self.addCleanup(client.close)
        client.track(EVENT)
        client.flush()
        self.assertEqual(len(server.bodies), 2)
        self.assertEqual(server.bodies[0], server.bodies[1])
        self.assertGreaterEqual(server.times[1] - server.times[0], 0.95)

    def test_retry_after_as_an_http_date(self) -> None:
        def answer(n: int) -> Answer:
            # HTTP dates have whole seconds: 2 s ahead is a wait of more than 1 s.
            later = email.utils.formatdate(time.time() + 2, usegmt=True)
            return (503, {"retry-after": later}, {"error": "busy", "status": 503}) if n == 0 else STORED

        server = self.serve(answer)
        client = vigil.ObserveClient(server.url, "k", retry=FAST)
        client.ingest([EVENT])
        self.assertEqual(len(server.bodies), 2)
        self.assertGreaterEqual(server.times[1] - server.times[0], 0.95)
        self.assertAlmostEqual(vigil.parse_retry_after(email.utils.formatdate(time.time() + 30, usegmt=True)) or 0, 30, delta=1.5)

    def test_5xx_is_retried_with_backoff_then_raised_typed(self) -> None:
        server = self.serve(lambda n: (500, {}, {"error": "storage error", "status": 500}))
        client = vigil.ObserveClient(server.url, "k", retry=FAST)
        with self.assertRaises(vigil.VigilServerError) as raised:
            client.ingest([EVENT])
        self.assertEqual(len(server.bodies), 4)
        self.assertEqual((raised.exception.status, str(raised.exception)), (500, "storage error"))

    def test_a_retry_after_beyond_the_retry_time_gives_up_at_once(self) -> None:
        server = self.serve(lambda n: (429, {"retry-after": "60"}, {"error": {"code": "rate_limited", "message": "limit"}}))
        client = vigil.ObserveClient(server.url, "k", retry=FAST)
        started = time.monotonic()
        with self.assertRaises(vigil.VigilRateLimitError) as raised:
            client.ingest([EVENT])
        self.assertLess(time.monotonic() - started, 1)
        self.assertEqual((raised.exception.retry_after, raised.exception.code), (60, "rate_limited"))
        self.assertEqual(len(server.bodies), 1)

    def test_a_400_is_not_retried(self) -> None:
        server = self.serve(lambda n: (400, {}, {"error": "validation failed", "status": 400, "details": [{"path": "events.0.agentId", "message": "Required"}]}))
        client = vigil.ObserveClient(server.url, "k", retry=FAST)
        with self.assertRaises(vigil.VigilValidationError) as raised:
            client.ingest([EVENT])
        self.assertEqual(raised.exception.details, [{"path": "events.0.agentId", "message": "Required"}])
        self.assertEqual(len(server.bodies), 1)

    def test_every_attempt_has_a_timeout(self) -> None:
        release = threading.Event()
        self.addCleanup(release.set)
        server = self.serve(lambda n: None if release.wait(5) else None)
        client = vigil.ObserveClient(server.url, "k", timeout=0.2, retry=vigil.RetryPolicy(max_retries=1, base_delay=0.01))
        started = time.monotonic()
        with self.assertRaises(vigil.VigilNetworkError) as raised:
            client.ingest([EVENT])
        self.assertTrue(raised.exception.timed_out)
        self.assertEqual(len(server.bodies), 2)
        self.assertLess(time.monotonic() - started, 2)

    def test_network_errors_are_retried_then_raised(self) -> None:
        # Nothing listens on port 9 (discard) of localhost: connection refused.
        client = vigil.ObserveClient("http://127.0.0.1:9", "k", retry=vigil.RetryPolicy(max_retries=2, base_delay=0.01))
        with self.assertRaises(vigil.VigilNetworkError) as raised:
            client.ingest([EVENT])
        self.assertFalse(raised.exception.timed_out)

    def test_a_full_queue_drops_and_reports_and_close_refuses_more(self) -> None:
        release = threading.Event()
        self.addCleanup(release.set)
        server = self.serve(lambda n: STORED if release.wait(10) else None)
        reported: List[vigil.VigilDeliveryError] = []
        client = vigil.ObserveClient(server.url, "k", batch_size=1, max_queue_size=1, flush_interval=60, on_error=reported.append)
        for i in range(5):
            client.track({**EVENT, "payload": {"type": "t", "data": i}})
        # The first request hangs, so the one-event queue holds one more and drops the rest.
        dropped = [e for error in reported for e in error.events]
        self.assertGreaterEqual(len(dropped), 2)
        self.assertTrue(all(error.reason == "queue_full" and error.count == 1 for error in reported))
        release.set()
        client.close()
        self.assertEqual(len(server.bodies) + len(dropped), 5)
        with self.assertRaises(vigil.VigilClosedError):
            client.track(EVENT)


@needs_vigil
class ServiceErrorsTest(unittest.TestCase):
    def test_both_services_answer_health(self) -> None:
        self.assertEqual(vigil.ObserveClient().health()["status"], "ok")
        self.assertEqual(vigil.GateClient().health()["status"], "ok")

    def test_observe_errors_are_typed_with_the_server_message(self) -> None:
        client = vigil.ObserveClient(api_key="not-a-key", retry=FAST)
        with self.assertRaises(vigil.VigilAuthenticationError) as raised:
            client.ingest([EVENT])
        self.assertEqual(raised.exception.status, 401)
        self.assertEqual(raised.exception.code, "unauthorized")
        self.assertEqual(str(raised.exception), raised.exception.body["error"])
        with self.assertRaises(vigil.VigilNotFoundError) as missing:
            vigil.ObserveClient().get_session("no-such-session-anywhere")
        self.assertEqual(missing.exception.code, "session_not_found")

    def test_gate_errors_are_typed_with_their_code(self) -> None:
        agent = vigil.GateClient(api_key=GATE_KEY)
        with self.assertRaises(vigil.VigilNotFoundError) as missing:
            agent.get_request("no-such-request")
        self.assertEqual(missing.exception.code, "not_found")
        with self.assertRaises(vigil.VigilPermissionError) as forbidden:
            agent.create_policy({"name": "nope", "rules": []})
        self.assertEqual(forbidden.exception.code, "forbidden")
        with self.assertRaises(vigil.VigilValidationError) as invalid:
            vigil.GateClient(api_key=GATE_ADMIN_KEY).create_request("x", urgency="whenever")
        self.assertEqual(invalid.exception.code, "bad_request")
        self.assertTrue(invalid.exception.message)


if __name__ == "__main__":
    unittest.main()
