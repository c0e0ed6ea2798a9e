"""observe_openai against stand-ins shaped as openai>=1's clients (the package itself cannot be
installed here): what a wrapped create() records in a real observe session."""

from __future__ import annotations

import asyncio
import unittest
from types import SimpleNamespace
from typing import Any, List

import vigil
from _support import needs_vigil, session_id, stored_events
from vigil.openai import observe_openai


class ProviderError(Exception):
    status_code = 429


def completion(model: str) -> Any:
    message = SimpleNamespace(tool_calls=None, model_dump=lambda: {"role": "assistant", "content": "hello"})
    return SimpleNamespace(
        model=model,
        choices=[SimpleNamespace(message=message, finish_reason="stop")],
        usage=SimpleNamespace(prompt_tokens=12, completion_tokens=3),
    )


def answer(kwargs: Any) -> Any:
    if kwargs["model"] == "failing":
        raise ProviderError("rate limited")
    return completion(kwargs["model"])


class SyncCompletions:
    def create(self, **kwargs: Any) -> Any:
        return answer(kwargs)


class AsyncCompletions:
    async def create(self, **kwargs: Any) -> Any:
        return answer(kwargs)


def client(completions: Any) -> Any:
    return SimpleNamespace(chat=SimpleNamespace(completions=completions))


def event_types(sid: str) -> List[str]:
    return [e["eventType"] for e in stored_events(sid)]


@needs_vigil
class ObserveOpenAiTest(unittest.TestCase):
    def setUp(self) -> None:
        self.observe = vigil.ObserveClient(flush_interval=60)
        self.addCleanup(self.observe.close)

    def test_sync_calls_record_the_call_and_its_response_or_failure(self) -> None:
        openai = observe_openai(client(SyncCompletions()))
        self.assertIsNotNone(openai.chat.completions.create(model="gpt-4o", messages=[]), "outside a session it just runs")
        sid = session_id("openai-sync")
        with self.observe.session(agent_id="py-agent", session_id=sid):
            response = openai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}], temperature=0)
            with self.assertRaises(ProviderError):
                openai.chat.completions.create(model="failing", messages=[])
            openai.chat.completions.create(model="gpt-4o", messages=[], stream=True)
        self.assertEqual(response.model, "gpt-4o")
        events = stored_events(sid)
        self.assertEqual([e["eventType"] for e in events], ["session_started", "llm_call", "llm_response", "llm_call", "tool_error", "session_ended"])
        call, recorded, failed = events[1]["payload"], events[2]["payload"], events[4]["payload"]
        self.assertEqual((call["provider"], call["model"], call["parameters"]), ("openai", "gpt-4o", {"temperature": 0}))
        self.assertEqual(recorded["callId"], call["callId"])
        self.assertEqual(recorded["usage"], {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15})
        self.assertEqual(recorded["completion"], {"role": "assistant", "content": "hello"})
        self.assertEqual((failed["callId"], failed["errorCode"], failed["error"]), (events[3]["payload"]["callId"], 429, "rate limited"))

    def test_async_calls_are_recorded_alike(self) -> None:
        openai = observe_openai(client(AsyncCompletions()))
        sid = session_id("openai-async")

        async def run() -> None:
            async with self.observe.session(agent_id="py-agent", session_id=sid):
                await openai.chat.completions.create(model="gpt-4o", messages=[])
                with self.assertRaises(ProviderError):
                    await openai.chat.completions.create(model="failing", messages=[])

        asyncio.run(run())
        self.assertEqual(event_types(sid), ["session_started", "llm_call", "llm_response", "llm_call", "tool_error", "session_ended"])


if __name__ == "__main__":
    unittest.main()
