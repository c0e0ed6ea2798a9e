"""Optional capture of OpenAI chat completions (``pip install vigil-sdk[openai]``).

Tested only against stand-ins shaped as ``openai>=1``'s clients (tests/test_openai.py): the test
suite cannot reach PyPI, so it has never run against the real ``openai`` package. It relies only on
the documented shape of ``openai>=1`` responses
(``model``, ``usage.prompt_tokens``/``completion_tokens``, ``choices[0].message``/``finish_reason``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, TypeVar

from .observe import LlmCall, Session, current_session

C = TypeVar("C")

_TOOL_NAME = "openai.chat.completions.create"


def _dump(value: Any) -> Any:
    """A pydantic model (what openai returns) as plain data."""
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def _started(session: Session, kwargs: Dict[str, Any]) -> LlmCall:
    parameters = {k: v for k, v in kwargs.items() if k not in ("messages", "model", "tools")}
    tools: Optional[List[Any]] = kwargs.get("tools")
    return session.record_llm_call("openai", str(kwargs.get("model", "unknown")), list(kwargs.get("messages", [])), parameters=parameters, tools=tools)


def _finished(session: Session, call: LlmCall, response: Any) -> None:
    usage = getattr(response, "usage", None)
    choice = response.choices[0] if getattr(response, "choices", None) else None
    message = getattr(choice, "message", None)
    tool_calls = getattr(message, "tool_calls", None)
    session.record_llm_response(
        call,
        _dump(message),
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        finish_reason=str(getattr(choice, "finish_reason", None) or "stop"),
        tool_calls=[_dump(t) for t in tool_calls] if tool_calls else None,
        model=str(getattr(response, "model", None) or call.model),
    )


def _failed(session: Session, call: LlmCall, error: BaseException) -> None:
    payload: Dict[str, Any] = {"toolName": _TOOL_NAME, "callId": call.call_id, "error": str(error) or type(error).__name__, "durationMs": (time.perf_counter() - call.started_at) * 1000}
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        payload["errorCode"] = status
    session.event("tool_error", payload, severity="error")


@contextlib.contextmanager
def _recorded(kwargs: Dict[str, Any]) -> Iterator[Callable[[Any], Any]]:
    """Records the create() call its block makes in the ambient session: llm_call on entry, then
    llm_response for the response the block hands to what it is given (which returns it), or a
    tool_error when the block raises. Outside a session, and for streamed calls, it records nothing."""
    session = current_session()
    if session is None or kwargs.get("stream"):
        yield lambda response: response
        return
    call = _started(session, kwargs)

    def finished(response: Any) -> Any:
        _finished(session, call, response)
        return response

    try:
        yield finished
    except Exception as error:
        _failed(session, call, error)
        raise


def observe_openai(client: C) -> C:
    """Records each ``client.chat.completions.create(...)`` made inside a Vigil session as llm_call
    and llm_response (usage, cost from the price table, latency), or a tool_error with the
    provider's status. Works with ``OpenAI`` and ``AsyncOpenAI``; streamed calls (``stream=True``)
    and other endpoints pass through unrecorded. Returns the same client."""
    completions: Any = getattr(client, "chat").completions
    create: Callable[..., Any] = completions.create

    if inspect.iscoroutinefunction(create):

        @functools.wraps(create)
        async def create_async(*args: Any, **kwargs: Any) -> Any:
            with _recorded(kwargs) as finished:
                return finished(await create(*args, **kwargs))

        completions.create = create_async
        return client

    @functools.wraps(create)
    def create_sync(*args: Any, **kwargs: Any) -> Any:
        with _recorded(kwargs) as finished:
            return finished(create(*args, **kwargs))

    completions.create = create_sync
    return client
