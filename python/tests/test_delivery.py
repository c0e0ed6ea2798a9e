"""Delivery through outages (issue 34): a server down for longer than the old ~1 s of retries, a
lost answer, 503 with Retry-After, 409 for a key in flight, the byte-bounded queue and every drop
reported with its count and reason. Against a small real HTTP server that stores batches as
observe does (once per Idempotency-Key), and against the real observe."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import unittest
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

import vigil
from vigil._http import encode_json
from _support import PACKAGE_ROOT, needs_vigil, session_id, stored_events

#: Retries as the default policy makes them (10 minutes of them), with shorter pauses for the test.
QUICK = vigil.RetryPolicy(base_delay=0.05, max_delay=0.5)

#: What the fake answers instead of storing: (status, headers), or None to store the batch.
Refusal = Optional[Tuple[int, Dict[str, str]]]


class FakeObserve:
    """POST /api/events as observe answers it: a batch is stored once per Idempotency-Key (a repeat
    answers the first answer). ``refuse(n)`` may answer request n (from 0) otherwise; ``drop_answer(n)``
    stores request n and then closes the connection without answering."""

    def __init__(
        self,
        port: int = 0,
        refuse: Callable[[int], Refusal] = lambda n: None,
        drop_answer: Callable[[int], bool] = lambda n: False,
    ) -> None:
        self.stored: List[Any] = []
        self.requests: List[Tuple[Optional[str], bytes, float]] = []
        self.answers: Dict[str, bytes] = {}
        self.release = threading.Event()
        self.release.set()
        lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                key = self.headers.get("idempotency-key")
                fake.release.wait(30)
                with lock:
                    n = len(fake.requests)
                    fake.requests.append((key, raw, time.monotonic()))
                    refusal = refuse(n)
                    if refusal is None:
                        answer = fake.answers.get(key) if key is not None else None
                        replayed = answer is not None
                        if answer is None:
                            events = json.loads(raw)["events"]
                            fake.stored.extend(events)
                            answer = json.dumps({"ingested": len(events), "events": [{"id": str(uuid.uuid4()), "hash": "h"} for _ in events]}).encode()
                            if key is not None:
                                fake.answers[key] = answer
                if refusal is not None:
                    status, headers = refusal
                    self.reply(status, headers, json.dumps({"error": "refused", "status": status}).encode())
                elif drop_answer(n):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                else:
                    self.reply(201, {"idempotent-replayed": "true"} if replayed else {}, answer)

            def reply(self, status: int, headers: Dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def stored_data(self) -> List[Any]:
        return sorted(event["payload"]["data"] for event in self.stored)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def event(n: Any) -> Dict[str, Any]:
    return {"sessionId": "s", "agentId": "a", "eventType": "custom", "payload": {"type": "t", "data": n}}


class DeliveryTest(unittest.TestCase):
    def serve(self, **options: Any) -> FakeObserve:
        server = FakeObserve(**options)
        self.addCleanup(server.close)
        return server

    def client(self, url: str, reported: List[vigil.VigilDeliveryError], **options: Any) -> vigil.ObserveClient:
        client = vigil.ObserveClient(url, "k", on_error=reported.append, flush_on_exit=False, **options)
        self.addCleanup(lambda: client.close(5) if client.pending_events == 0 else None)
        return client

    def test_a_server_down_for_3_seconds_then_back_gets_every_event_once(self) -> None:
        port = free_port()
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(f"http://127.0.0.1:{port}", reported, retry=QUICK, batch_size=10, flush_interval=0.05)
        for n in range(50):
            client.track(event(n))
        time.sleep(3)  # nothing listens: connection refused all along
        server = self.serve(port=port)
        client.flush(timeout=30)
        self.assertEqual(server.stored_data(), list(range(50)))
        self.assertEqual(reported, [])

    def test_a_lost_answer_is_retried_with_the_same_key_and_stored_once(self) -> None:
        server = self.serve(drop_answer=lambda n: n == 0)
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, retry=QUICK, batch_size=5, flush_interval=60)
        for n in range(5):
            client.track(event(n))
        client.flush(timeout=30)
        self.assertEqual(server.stored_data(), [0, 1, 2, 3, 4])
        self.assertEqual(len(server.requests), 2)
        (first_key, first_body, _), (second_key, second_body, _) = server.requests
        self.assertIsNotNone(first_key)
        self.assertEqual((second_key, second_body), (first_key, first_body), "the retry repeats the batch's key and bytes")
        self.assertEqual(reported, [])

    def test_each_batch_has_its_own_key(self) -> None:
        server = self.serve()
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, batch_size=2, flush_interval=60)
        for n in range(6):
            client.track(event(n))
        client.flush(timeout=30)
        keys = [key for key, _, _ in server.requests]
        self.assertEqual(len(keys), 3)
        self.assertEqual(len(set(keys)), 3)
        for key in keys:
            self.assertEqual(str(uuid.UUID(key or "")), key)

    def test_a_503_retry_after_is_waited_out_in_full(self) -> None:
        server = self.serve(refuse=lambda n: (503, {"retry-after": "2"}) if n == 0 else None)
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, retry=vigil.RetryPolicy(base_delay=0.01), flush_interval=60)
        client.track(event(1))
        client.flush(timeout=30)
        self.assertEqual(server.stored_data(), [1])
        self.assertGreaterEqual(server.requests[1][2] - server.requests[0][2], 1.95)
        self.assertEqual(reported, [])

    def test_a_409_for_a_key_in_flight_is_retried(self) -> None:
        server = self.serve(refuse=lambda n: (409, {"retry-after": "1"}) if n == 0 else None)
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, retry=QUICK, flush_interval=60)
        client.track(event(1))
        client.flush(timeout=30)
        self.assertEqual(server.stored_data(), [1])
        self.assertEqual(server.requests[0][0], server.requests[1][0])

    def test_the_byte_bound_drops_and_reports_the_count_and_reason(self) -> None:
        server = self.serve()
        server.release.clear()  # requests wait: the queue fills
        reported: List[vigil.VigilDeliveryError] = []
        size = len(encode_json(event(10)))
        client = self.client(server.url, reported, batch_size=1, flush_interval=0, max_queue_bytes=3 * size)
        for n in range(10, 30):
            client.track(event(n))
        server.release.set()
        client.flush(timeout=30)
        dropped = [e["payload"]["data"] for error in reported for e in error.events]
        self.assertGreater(len(dropped), 0)
        for error in reported:
            self.assertEqual((error.reason, error.count), ("queue_full", 1))
            self.assertIn("bytes", str(error))
        self.assertEqual(sorted(server.stored_data() + dropped), list(range(10, 30)))

    def test_giving_up_after_max_retry_time_reports_the_batch(self) -> None:
        server = self.serve(refuse=lambda n: (503, {}))
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, retry=QUICK, max_retry_time=1, batch_size=3, flush_interval=60)
        for n in range(3):
            client.track(event(n))
        started = time.monotonic()
        with self.assertRaises(vigil.VigilDeliveryError) as raised:
            client.flush(timeout=30)
        self.assertLess(time.monotonic() - started, 5)
        self.assertGreater(len(server.requests), 2)
        self.assertEqual(len({key for key, _, _ in server.requests}), 1)
        self.assertEqual([(e.reason, e.count) for e in reported], [("retries_exhausted", 3)])
        self.assertIs(raised.exception, reported[0])

    def test_max_retry_time_0_sends_once(self) -> None:
        server = self.serve(refuse=lambda n: (503, {}))
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, max_retry_time=0, flush_interval=60)
        client.track(event(1))
        with self.assertRaises(vigil.VigilDeliveryError):
            client.flush(timeout=30)
        self.assertEqual(len(server.requests), 1)

    def test_a_refused_batch_is_reported_as_refused(self) -> None:
        server = self.serve(refuse=lambda n: (422, {}))
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, retry=QUICK, flush_interval=60)
        client.track(event(1))
        with self.assertRaises(vigil.VigilDeliveryError):
            client.flush(timeout=30)
        self.assertEqual([(e.reason, e.count) for e in reported], [("refused", 1)])
        self.assertEqual(len(server.requests), 1)

    def test_an_event_that_is_not_json_is_reported_and_the_others_stored(self) -> None:
        server = self.serve()
        reported: List[vigil.VigilDeliveryError] = []
        client = self.client(server.url, reported, flush_interval=60)
        client.track(event(1))
        client.track(event(math.nan))
        client.track(event(2))
        client.flush(timeout=30)
        self.assertEqual(server.stored_data(), [1, 2])
        self.assertEqual([(e.reason, e.count) for e in reported], [("unserializable", 1)])

    def test_close_raises_only_the_documented_delivery_error(self) -> None:
        server = self.serve(refuse=lambda n: (400, {}))
        reported: List[vigil.VigilDeliveryError] = []
        client = vigil.ObserveClient(server.url, "k", on_error=reported.append, flush_on_exit=False)
        client.track(event(1))
        with self.assertRaises(vigil.VigilDeliveryError) as raised:
            client.close()
        self.assertIs(raised.exception, reported[0])
        with self.assertRaises(vigil.VigilClosedError):
            client.track(event(2))

    def test_at_exit_the_batch_still_being_retried_is_reported_with_the_queue(self) -> None:
        server = self.serve(refuse=lambda n: (503, {}))
        script = textwrap.dedent(
            f"""
            import time, vigil
            def report(error):
                print(error.reason, error.count, flush=True)
            client = vigil.ObserveClient({server.url!r}, "k", batch_size=2, flush_interval=0, exit_timeout=0.5, on_error=report)
            for n in range(2):
                client.track({{"sessionId": "s", "agentId": "a", "eventType": "custom", "payload": {{"type": "t", "data": n}}}})
            time.sleep(0.3)  # the first batch is being retried
            client.track({{"sessionId": "s", "agentId": "a", "eventType": "custom", "payload": {{"type": "t", "data": 2}}}})
            """
        )
        env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["exit", "3"])


@needs_vigil
class IdempotentIngestTest(unittest.TestCase):
    def test_observe_stores_a_batch_sent_twice_with_one_key_once(self) -> None:
        client = vigil.ObserveClient(retry=QUICK)
        sid = session_id("idempotent")
        batch = [{"sessionId": sid, "agentId": "py-agent", "eventType": "custom", "payload": {"type": "t", "data": n}} for n in range(3)]
        key = str(uuid.uuid4())
        first = client.ingest(batch, idempotency_key=key)
        again = client.ingest(batch, idempotency_key=key)
        self.assertEqual(again, first)
        self.assertEqual(len(stored_events(sid)), 3)


if __name__ == "__main__":
    unittest.main()
