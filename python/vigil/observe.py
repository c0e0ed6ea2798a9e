"""Client of the observe service (default http://localhost:3400): batched event tracking on a
background thread, sessions as context managers (ambient through contextvars), the
@observe_tool decorator and LLM call helpers with costs from the price table."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import inspect
import json
import time
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Type, TypeVar, Union, cast, overload

from ._http import RetryPolicy, Service, ServiceClient, quote
from ._queue import DEFAULT_MAX_QUEUE_BYTES, EventQueue, ErrorHandler
from .errors import VigilDeliveryError, VigilError
from .pricing import ModelPrice, PriceTable

DEFAULT_OBSERVE_URL = "http://localhost:3400"

Json = Dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_current: contextvars.ContextVar[Optional["Session"]] = contextvars.ContextVar("vigil_session", default=None)


def current_session() -> Optional["Session"]:
    """The session of the innermost ``with client.session(...)`` block of this context (thread or task), if any."""
    return _current.get()


def now_iso() -> str:
    """Now as observe writes timestamps: ISO 8601 UTC with milliseconds."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _timestamp(value: Union[str, datetime.datetime, None]) -> str:
    if value is None:
        return now_iso()
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


def storable(value: Any) -> Any:
    """A JSON-storable version of a tool's arguments or result: objects JSON cannot hold become their repr."""
    try:
        return json.loads(json.dumps(value, allow_nan=False, default=repr))
    except (TypeError, ValueError, RecursionError) as error:
        return {"unserializable": True, "type": type(value).__name__, "reason": str(error)}


def _error_code(error: BaseException) -> Optional[Union[str, int]]:
    code = getattr(error, "code", None) or getattr(error, "errno", None)
    return code if isinstance(code, (str, int)) and not isinstance(code, bool) else None


@dataclass(frozen=True)
class LlmCall:
    """What record_llm_call returns and record_llm_response takes: the call's identity and start time."""

    call_id: str
    provider: str
    model: str
    started_at: float


@dataclass(frozen=True)
class LlmResponseRecord:
    call_id: str
    cost_usd: float
    #: False when the model has no price in the table (cost_usd is then 0).
    priced: bool
    latency_ms: float


class ObserveClient(ServiceClient):
    """Sends events to observe in batches from a background thread.

    ``base_url`` and ``api_key`` default to VIGIL_URL (else http://localhost:3400) and VIGIL_API_KEY.
    Every request has a ``timeout`` (seconds) and is retried on 408, 425, 429, 500, 502, 503, 504
    and network errors for up to ``max_retry_time`` seconds (default 600; 0: no retries) with
    exponential backoff and full jitter, honouring Retry-After (``retry`` tunes the policy). Each
    batch carries one Idempotency-Key that its retries repeat, so it is stored once.
    """

    service = Service("observe", DEFAULT_OBSERVE_URL, url_variable="VIGIL_URL", key_variable="VIGIL_API_KEY")

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        batch_size: int = 100,
        flush_interval: float = 1.0,
        max_queue_size: int = 10_000,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
        flush_on_exit: bool = True,
        exit_timeout: float = 10.0,
        on_error: Optional[ErrorHandler] = None,
        prices: Sequence[ModelPrice] = (),
        timeout: float = 10.0,
        retry: Optional[RetryPolicy] = None,
        max_retry_time: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retry=retry, max_retry_time=max_retry_time, headers=headers)
        #: The price table for LLM costs: the built-in one with ``prices`` (e.g. your MODEL_PRICES) applied.
        self.prices = PriceTable.default(prices)
        self._queue = EventQueue(
            self._send_batch,
            batch_size=batch_size,
            flush_interval=flush_interval,
            max_queue_size=max_queue_size,
            max_queue_bytes=max_queue_bytes,
            flush_on_exit=flush_on_exit,
            exit_timeout=exit_timeout,
            on_error=on_error,
        )

    # -- events: batched -------------------------------------------------------------------------

    def track(self, event: Mapping[str, Any]) -> None:
        """Queues one event ``{sessionId, agentId, eventType, payload, ...}``; timestamped now unless it has one."""
        queued = dict(event)
        queued.setdefault("timestamp", now_iso())
        self._queue.push(queued)

    def flush(self, timeout: Optional[float] = None) -> None:
        """Sends everything queued and waits for it; raises VigilDeliveryError when some of it was not stored."""
        self._queue.flush(timeout)

    def close(self, timeout: Optional[float] = None) -> None:
        """Flushes and stops: later track() calls raise VigilClosedError. Raises VigilDeliveryError when
        some of what it flushed was not stored (already reported to on_error), TimeoutError when
        ``timeout`` seconds pass first; nothing else."""
        self._queue.close(timeout)

    @property
    def pending_events(self) -> int:
        """Events queued and not yet sent."""
        return self._queue.size

    def ingest(self, events: List[Mapping[str, Any]], *, idempotency_key: Optional[str] = None) -> Json:
        """Sends events at once, as one atomic batch (1 to 1000), bypassing the queue. Its retries repeat
        one Idempotency-Key (``idempotency_key``, else a random UUID), so the batch is stored once."""
        return cast(
            Json,
            self._http.request("POST", "/api/events", body={"events": events}, idempotency_key=idempotency_key or str(uuid.uuid4())),
        )

    def _send_batch(self, texts: List[str], idempotency_key: str) -> None:
        """The queue's sender: the events' JSON texts as one batch body, under the batch's key."""
        body = ('{"events":[' + ",".join(texts) + "]}").encode("utf-8")
        self._http.request("POST", "/api/events", raw_body=body, idempotency_key=idempotency_key)

    # -- sessions ---------------------------------------------------------------------------------

    def session(
        self,
        agent_id: str,
        *,
        session_id: Optional[str] = None,
        agent_name: Optional[str] = None,
        agent_version: Optional[str] = None,
        tags: Optional[List[str]] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        payload: Optional[Mapping[str, Any]] = None,
    ) -> "Session":
        """Starts a session (queues session_started). Use it as a context manager: the block's
        session is ambient (current_session(), @observe_tool), and leaving the block ends it
        (reason "error" when the block raised) and flushes."""
        started: Json = dict(payload or {})
        if agent_name is not None:
            started["agentName"] = agent_name
        if agent_version is not None:
            started["agentVersion"] = agent_version
        if tags is not None:
            started["tags"] = list(tags)
        return Session(self, agent_id, session_id or str(uuid.uuid4()), metadata, started)

    # -- queries ----------------------------------------------------------------------------------

    def get_session(self, session_id: str) -> Json:
        return cast(Json, self._http.request("GET", f"/api/sessions/{quote(session_id)}"))

    def list_events(self, **query: Any) -> Json:
        """GET /api/events with the query as keyword arguments, e.g. ``session_id=...`` is sent as ``sessionId``."""
        camel = {_camel(k): v for k, v in query.items()}
        return cast(Json, self._http.request("GET", "/api/events", query=camel))

    def health(self) -> Json:
        return cast(Json, self._http.request("GET", "/api/health"))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


class Session:
    """One agent run as a Vigil session; one-line helpers for the common events. Made by
    ObserveClient.session(), which gives it the session_started payload it emits."""

    def __init__(self, client: ObserveClient, agent_id: str, session_id: str, metadata: Optional[Mapping[str, Any]], started: Json) -> None:
        self.client = client
        self.id = session_id
        self.agent_id = agent_id
        self._metadata = dict(metadata) if metadata else None
        self._started = time.monotonic()
        self._tool_calls = 0
        self._ended = False
        self._tokens: List[contextvars.Token[Optional[Session]]] = []
        self.event("session_started", started)

    # -- context manager: ambient session, ended and flushed on exit -------------------------------

    def __enter__(self) -> "Session":
        self._tokens.append(_current.set(self))
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        _current.reset(self._tokens.pop())
        self._finish(exc)

    async def __aenter__(self) -> "Session":
        return self.__enter__()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        _current.reset(self._tokens.pop())
        # The flush waits for the server: off the event loop.
        await asyncio.get_running_loop().run_in_executor(None, self._finish, exc)

    def _finish(self, exc: Optional[BaseException]) -> None:
        summary = f"{type(exc).__name__}: {exc}" if exc is not None else None
        try:
            self.end("error" if exc is not None else "completed", summary=summary)
        except VigilDeliveryError:
            # Already reported to on_error; raising here would hide the block's own outcome.
            pass

    # -- events -----------------------------------------------------------------------------------

    def event(
        self,
        event_type: str,
        payload: Mapping[str, Any],
        *,
        severity: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        timestamp: Union[str, datetime.datetime, None] = None,
    ) -> None:
        """Queues one event of this session (session metadata, then ``metadata``, on it)."""
        event: Json = {
            "sessionId": self.id,
            "agentId": self.agent_id,
            "eventType": event_type,
            "payload": dict(payload),
            "timestamp": _timestamp(timestamp),
        }
        if severity is not None:
            event["severity"] = severity
        if self._metadata or metadata:
            event["metadata"] = {**(self._metadata or {}), **(metadata or {})}
        self.client.track(event)

    def custom(self, type: str, data: Any, **options: Any) -> None:
        """A ``custom`` event."""
        self.event("custom", {"type": type, "data": data}, **options)

    def _tool_started(self, tool_name: str, arguments: Any, call_id: Optional[str], server_name: Optional[str]) -> str:
        call_id = call_id or str(uuid.uuid4())
        self._tool_calls += 1
        payload: Json = {"toolName": tool_name, "callId": call_id, "arguments": storable(arguments)}
        if server_name is not None:
            payload["serverName"] = server_name
        self.event("tool_call", payload)
        return call_id

    def _tool_succeeded(self, tool_name: str, call_id: str, result: Any, started: float) -> None:
        self.event("tool_response", {"toolName": tool_name, "callId": call_id, "result": storable(result), "durationMs": _ms_since(started)})

    def _tool_failed(self, tool_name: str, call_id: str, error: BaseException, started: float) -> None:
        payload: Json = {"toolName": tool_name, "callId": call_id, "error": str(error) or type(error).__name__, "durationMs": _ms_since(started)}
        code = _error_code(error)
        if code is not None:
            payload["errorCode"] = code
        self.event("tool_error", payload, severity="error")

    def wrap_tool_call(
        self,
        tool_name: str,
        arguments: Any,
        fn: Callable[[], T],
        *,
        call_id: Optional[str] = None,
        server_name: Optional[str] = None,
    ) -> T:
        """Runs ``fn`` as the tool ``tool_name``: emits tool_call, then tool_response with the result or
        tool_error with the error (severity error), both with durationMs. Returns fn's result and
        re-raises its error."""
        call_id = self._tool_started(tool_name, arguments, call_id, server_name)
        started = time.perf_counter()
        try:
            result = fn()
        except BaseException as error:
            self._tool_failed(tool_name, call_id, error, started)
            raise
        self._tool_succeeded(tool_name, call_id, result, started)
        return result

    async def wrap_async_tool_call(
        self,
        tool_name: str,
        arguments: Any,
        fn: Callable[[], Awaitable[T]],
        *,
        call_id: Optional[str] = None,
        server_name: Optional[str] = None,
    ) -> T:
        """wrap_tool_call for a coroutine function."""
        call_id = self._tool_started(tool_name, arguments, call_id, server_name)
        started = time.perf_counter()
        try:
            result = await fn()
        except BaseException as error:
            self._tool_failed(tool_name, call_id, error, started)
            raise
        self._tool_succeeded(tool_name, call_id, result, started)
        return result

    def record_llm_call(
        self,
        provider: str,
        model: str,
        messages: Sequence[Any],
        *,
        system_prompt: Optional[str] = None,
        parameters: Optional[Mapping[str, Any]] = None,
        tools: Optional[Sequence[Any]] = None,
        call_id: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> LlmCall:
        """Emits llm_call; pass what it returns to record_llm_response."""
        call_id = call_id or str(uuid.uuid4())
        payload: Json = {"callId": call_id, "provider": provider, "model": model, "messages": storable(list(messages))}
        if system_prompt is not None:
            payload["systemPrompt"] = system_prompt
        if parameters is not None:
            payload["parameters"] = storable(dict(parameters))
        if tools is not None:
            payload["tools"] = storable(list(tools))
        self.event("llm_call", payload, metadata=metadata)
        return LlmCall(call_id=call_id, provider=provider, model=model, started_at=time.perf_counter())

    def record_llm_response(
        self,
        call: LlmCall,
        completion: Any,
        *,
        input_tokens: int,
        output_tokens: int,
        total_tokens: Optional[int] = None,
        finish_reason: str = "stop",
        tool_calls: Optional[Sequence[Any]] = None,
        cost_usd: Optional[float] = None,
        latency_ms: Optional[float] = None,
        provider: Optional[str] = None,
        model: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> LlmResponseRecord:
        """Emits llm_response with its cost (from the price table unless given; 0 and flagged
        ``metadata.costUnpriced`` for a model without a price) and latency (since record_llm_call unless given)."""
        provider = provider or call.provider
        model = model or call.model
        computed = self.client.prices.cost_usd(model, provider, input_tokens, output_tokens)
        cost = cost_usd if cost_usd is not None else (computed if computed is not None else 0.0)
        priced = cost_usd is not None or computed is not None
        latency = latency_ms if latency_ms is not None else _ms_since(call.started_at)
        payload: Json = {
            "callId": call.call_id,
            "provider": provider,
            "model": model,
            "completion": storable(completion),
            "finishReason": finish_reason,
            "usage": {
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "totalTokens": total_tokens if total_tokens is not None else input_tokens + output_tokens,
            },
            "costUsd": cost,
            "latencyMs": latency,
        }
        if tool_calls is not None:
            payload["toolCalls"] = storable(list(tool_calls))
        self.event("llm_response", payload, metadata=metadata if priced else {**(metadata or {}), "costUnpriced": True})
        return LlmResponseRecord(call_id=call.call_id, cost_usd=cost, priced=priced, latency_ms=latency)

    def end(self, reason: str = "completed", *, summary: Optional[str] = None, timeout: Optional[float] = None) -> None:
        """Emits session_ended (with totalToolCalls and totalDurationMs) and flushes, so the session is
        stored when it returns. Ending twice only flushes."""
        if not self._ended:
            self._ended = True
            payload: Json = {
                "reason": reason,
                "totalToolCalls": self._tool_calls,
                "totalDurationMs": _ms_since(self._started, clock=time.monotonic),
            }
            if summary is not None:
                payload["summary"] = summary
            self.event("session_ended", payload)
        self.client.flush(timeout)


def _ms_since(started: float, clock: Callable[[], float] = time.perf_counter) -> float:
    return max(0.0, (clock() - started) * 1000)


# -- the ambient session's helpers ----------------------------------------------------------------


def _require_session() -> Session:
    session = _current.get()
    if session is None:
        raise VigilError("No active Vigil session: call this inside `with client.session(...)`")
    return session


def record_llm_call(provider: str, model: str, messages: Sequence[Any], **options: Any) -> LlmCall:
    """Session.record_llm_call on the ambient session (VigilError outside a session)."""
    return _require_session().record_llm_call(provider, model, messages, **options)


def record_llm_response(call: LlmCall, completion: Any, **options: Any) -> LlmResponseRecord:
    """Session.record_llm_response on the ambient session (VigilError outside a session)."""
    return _require_session().record_llm_response(call, completion, **options)


def _arguments(signature: Optional[inspect.Signature], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """The call's arguments by parameter name (``self``/``cls`` left out), as the tool_call records them."""
    if signature is None:
        return {"args": list(args), "kwargs": dict(kwargs)}
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), "kwargs": dict(kwargs)}
    return {name: value for name, value in bound.arguments.items() if name not in ("self", "cls")}


@overload
def observe_tool(fn: F) -> F: ...


@overload
def observe_tool(fn: None = None, *, name: Optional[str] = None, server_name: Optional[str] = None) -> Callable[[F], F]: ...


def observe_tool(fn: Optional[F] = None, *, name: Optional[str] = None, server_name: Optional[str] = None) -> Union[F, Callable[[F], F]]:
    """Records each call of the decorated function (sync or async) in the ambient session as
    tool_call then tool_response or tool_error; outside a session the function just runs.
    ``@observe_tool`` names the tool after the function, ``@observe_tool(name="search")`` explicitly."""

    def decorate(function: F) -> F:
        tool_name = name or function.__name__
        try:
            signature: Optional[inspect.Signature] = inspect.signature(function)
        except (TypeError, ValueError):
            signature = None

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                session = _current.get()
                if session is None:
                    return await function(*args, **kwargs)
                return await session.wrap_async_tool_call(
                    tool_name, _arguments(signature, args, kwargs), lambda: function(*args, **kwargs), server_name=server_name
                )

            return cast(F, async_wrapper)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            session = _current.get()
            if session is None:
                return function(*args, **kwargs)
            return session.wrap_tool_call(tool_name, _arguments(signature, args, kwargs), lambda: function(*args, **kwargs), server_name=server_name)

        return cast(F, wrapper)

    return decorate(fn) if fn is not None else decorate
