from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
import unittest
from typing import Any, Dict, List

import vigil
from _support import PACKAGE_ROOT, eventually, needs_vigil, session_id, stored_events


def types(events: List[Dict[str, Any]]) -> List[str]:
    return [e["eventType"] for e in events]


@needs_vigil
class BatchingTest(unittest.TestCase):
    def test_full_batches_go_at_once_the_rest_on_flush(self) -> None:
        client = vigil.ObserveClient(batch_size=5, flush_interval=60)
        self.addCleanup(client.close)
        sid = session_id("batch")
        for i in range(12):
            client.track({"sessionId": sid, "agentId": "py-agent", "eventType": "custom", "payload": {"type": "step", "data": {"i": i}}})
        # Two full batches are sent by the background thread without flush(); two events wait for the interval.
        eventually(lambda: len(stored_events(sid)), lambda n: n == 10)
        self.assertEqual(client.pending_events, 2)
        client.flush()
        events = stored_events(sid)
        self.assertEqual([e["payload"]["data"]["i"] for e in events], list(range(12)))
        self.assertEqual(client.pending_events, 0)

    def test_a_partial_batch_goes_after_the_flush_interval(self) -> None:
        client = vigil.ObserveClient(batch_size=100, flush_interval=0.5)
        self.addCleanup(client.close)
        sid = session_id("interval")
        client.track({"sessionId": sid, "agentId": "py-agent", "eventType": "custom", "payload": {"type": "tick", "data": None}})
        self.assertEqual(client.pending_events, 1)
        eventually(lambda: len(stored_events(sid)), lambda n: n == 1, timeout=5)
        self.assertEqual(client.pending_events, 0)

    def test_events_the_server_refuses_are_dropped_and_the_rest_stored(self) -> None:
        reported: List[vigil.VigilDeliveryError] = []
        client = vigil.ObserveClient(flush_interval=60, on_error=reported.append)
        self.addCleanup(client.close)
        sid = session_id("refused")
        good = {"sessionId": sid, "agentId": "py-agent", "eventType": "custom", "payload": {"type": "good", "data": 1}}
        bad = {"sessionId": sid, "agentId": "py-agent", "eventType": "tool_call", "payload": {"toolName": "search", "arguments": {}}}
        client.track(good)
        client.track(bad)
        client.track({**good, "payload": {"type": "good", "data": 2}})
        with self.assertRaises(vigil.VigilDeliveryError) as raised:
            client.flush()
        self.assertEqual([e["eventType"] for e in raised.exception.events], ["tool_call"])
        self.assertIsInstance(raised.exception.__cause__, vigil.VigilValidationError)
        self.assertIn("events.1.payload", raised.exception.__cause__.details[0]["path"])  # type: ignore[union-attr]
        self.assertEqual(reported, [raised.exception])
        self.assertEqual([e["payload"]["data"] for e in stored_events(sid)], [1, 2])


class PricingTest(unittest.TestCase):
    def test_a_computed_cost_is_exact_to_the_nano_dollar(self) -> None:
        # gpt-4o-mini, $0.15 in and $0.60 out per 1M tokens: (3 × 0.15 + 24 × 0.6) / 1e6 is 0.000014849999999999998 in doubles.
        cost = vigil.pricing.PriceTable.default().cost_usd("gpt-4o-mini", "openai", 3, 24)
        self.assertEqual(repr(cost), "1.485e-05")


@needs_vigil
class SessionTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = vigil.ObserveClient(flush_interval=60)
        self.addCleanup(self.client.close)

    def test_a_block_records_a_completed_session_with_its_tools(self) -> None:
        @vigil.observe_tool
        def search(query: str, limit: int = 3) -> List[str]:
            return [query] * limit

        @vigil.observe_tool(name="fetch_page", server_name="web")
        async def fetch(url: str) -> Dict[str, Any]:
            await asyncio.sleep(0.01)
            return {"url": url, "status": 200}

        @vigil.observe_tool
        def explode() -> None:
            raise ConnectionError(104, "peer reset")

        sid = session_id("ok")
        self.assertIsNone(vigil.current_session())
        with self.client.session(agent_id="py-agent", session_id=sid, agent_name="Py Agent", tags=["python"], metadata={"run": "t1"}) as session:
            self.assertIs(vigil.current_session(), session)
            self.assertEqual(search("vigil", limit=2), ["vigil", "vigil"])
            self.assertEqual(asyncio.run(fetch("https://example.com")), {"url": "https://example.com", "status": 200})
            with self.assertRaises(ConnectionError):
                explode()
        self.assertIsNone(vigil.current_session())
        # Leaving the block flushed: everything is stored now.
        events = stored_events(sid)
        self.assertEqual(
            types(events),
            ["session_started", "tool_call", "tool_response", "tool_call", "tool_response", "tool_call", "tool_error", "session_ended"],
        )
        started, call, response, async_call, async_response, error_call, error, ended = events
        self.assertEqual(started["payload"], {"agentName": "Py Agent", "tags": ["python"]})
        self.assertEqual(started["metadata"], {"run": "t1"})
        self.assertEqual(call["payload"]["toolName"], "search")
        self.assertEqual(call["payload"]["arguments"], {"query": "vigil", "limit": 2})
        self.assertEqual(response["payload"]["callId"], call["payload"]["callId"])
        self.assertEqual(response["payload"]["result"], ["vigil", "vigil"])
        self.assertGreaterEqual(response["payload"]["durationMs"], 0)
        self.assertEqual(async_call["payload"]["toolName"], "fetch_page")
        self.assertEqual(async_call["payload"]["serverName"], "web")
        self.assertEqual(async_response["payload"]["result"], {"url": "https://example.com", "status": 200})
        self.assertGreaterEqual(async_response["payload"]["durationMs"], 10)
        self.assertEqual(error_call["payload"]["toolName"], "explode")
        self.assertEqual(error["severity"], "error")
        self.assertEqual(error["payload"]["callId"], error_call["payload"]["callId"])
        self.assertIn("peer reset", error["payload"]["error"])
        self.assertEqual(error["payload"]["errorCode"], 104)
        self.assertEqual(ended["payload"]["reason"], "completed")
        self.assertEqual(ended["payload"]["totalToolCalls"], 3)
        self.assertEqual(self.client.get_session(sid)["status"], "completed")

    def test_a_raising_block_ends_the_session_with_reason_error(self) -> None:
        sid = session_id("raise")
        with self.assertRaises(ValueError):
            with self.client.session(agent_id="py-agent", session_id=sid):
                raise ValueError("the agent gave up")
        events = stored_events(sid)
        self.assertEqual(types(events), ["session_started", "session_ended"])
        self.assertEqual(events[-1]["payload"]["reason"], "error")
        self.assertEqual(events[-1]["payload"]["summary"], "ValueError: the agent gave up")
        self.assertEqual(self.client.get_session(sid)["status"], "error")

    def test_an_async_block_is_ambient_in_its_tasks(self) -> None:
        sid = session_id("async")

        @vigil.observe_tool
        async def lookup(key: str) -> str:
            return key.upper()

        async def run() -> None:
            async with self.client.session(agent_id="py-agent", session_id=sid):
                self.assertEqual(await asyncio.gather(lookup("a"), lookup("b")), ["A", "B"])

        asyncio.run(run())
        self.assertEqual(types(stored_events(sid)).count("tool_response"), 2)

    def test_tools_outside_a_session_just_run(self) -> None:
        @vigil.observe_tool
        def double(x: int) -> int:
            return 2 * x

        self.assertEqual(double(4), 8)
        self.assertEqual(self.client.pending_events, 0)
        with self.assertRaises(vigil.VigilError):
            vigil.record_llm_call("openai", "gpt-4o", [])

    def test_llm_calls_record_usage_cost_and_latency(self) -> None:
        sid = session_id("llm")
        with self.client.session(agent_id="py-agent", session_id=sid):
            call = vigil.record_llm_call("openai", "gpt-4o", [{"role": "user", "content": "hi"}], system_prompt="be brief", parameters={"temperature": 0})
            time.sleep(0.02)
            priced = vigil.record_llm_response(call, {"role": "assistant", "content": "hello"}, input_tokens=1000, output_tokens=500)
            local = vigil.record_llm_call("local", "my-own-model", [])
            unpriced = vigil.record_llm_response(local, "ok", input_tokens=10, output_tokens=5, finish_reason="length")
            given = vigil.record_llm_call("openai", "gpt-4o", [])
            explicit = vigil.record_llm_response(given, "ok", input_tokens=1, output_tokens=1, cost_usd=0.5, latency_ms=42)
        expected = self.client.prices.cost_usd("gpt-4o", "openai", 1000, 500)
        assert expected is not None
        self.assertTrue(priced.priced)
        self.assertAlmostEqual(priced.cost_usd, expected)
        self.assertGreaterEqual(priced.latency_ms, 20)
        self.assertFalse(unpriced.priced)
        self.assertEqual(unpriced.cost_usd, 0)
        self.assertEqual((explicit.cost_usd, explicit.latency_ms, explicit.priced), (0.5, 42, True))

        events = stored_events(sid)
        self.assertEqual(types(events), ["session_started"] + ["llm_call", "llm_response"] * 3 + ["session_ended"])
        first_call, first = events[1], events[2]
        self.assertEqual(first_call["payload"]["systemPrompt"], "be brief")
        self.assertEqual(first_call["payload"]["parameters"], {"temperature": 0})
        self.assertEqual(first["payload"]["callId"], first_call["payload"]["callId"])
        self.assertEqual(first["payload"]["usage"], {"inputTokens": 1000, "outputTokens": 500, "totalTokens": 1500})
        self.assertAlmostEqual(first["payload"]["costUsd"], expected)
        self.assertEqual(first["payload"]["finishReason"], "stop")
        self.assertNotIn("costUnpriced", first["metadata"])
        self.assertEqual(events[4]["payload"]["costUsd"], 0)
        self.assertEqual(events[4]["payload"]["finishReason"], "length")
        self.assertIs(events[4]["metadata"]["costUnpriced"], True)
        self.assertEqual((events[6]["payload"]["costUsd"], events[6]["payload"]["latencyMs"]), (0.5, 42))
        # The client's own query, snake_case keywords sent camelCase, lists as comma lists.
        queried = self.client.list_events(session_id=sid, event_type=["llm_call", "session_ended"], order="asc")
        self.assertEqual((queried["total"], [e["eventType"] for e in queried["events"]]), (4, ["llm_call"] * 3 + ["session_ended"]))


@needs_vigil
class ExitTest(unittest.TestCase):
    def test_events_still_queued_are_sent_when_the_interpreter_exits(self) -> None:
        sid = session_id("exit")
        script = textwrap.dedent(
            f"""
            import vigil
            client = vigil.ObserveClient(flush_interval=60)
            session = client.session(agent_id="py-agent", session_id={sid!r})
            session.custom("last-words", {{"n": 1}})
            assert client.pending_events == 2
            # No close(), no flush(): the atexit hook sends them.
            """
        )
        env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        self.assertEqual(types(stored_events(sid)), ["session_started", "custom"])


if __name__ == "__main__":
    unittest.main()
