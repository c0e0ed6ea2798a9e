"""The HTTP transport both clients share: bearer authentication, JSON bodies, a timeout on every
attempt, and retries for up to ``max_retry_time`` seconds with exponential backoff and full jitter
on 408, 425, 429, 500, 502, 503, 504 and network errors, honouring Retry-After. A request sent with
an Idempotency-Key (observe's event batches) repeats it on every retry, so a batch whose answer
was lost is stored once; it also retries observe's 409 for a key still in flight."""

from __future__ import annotations

import dataclasses
import email.utils
import json
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, cast

from .errors import ErrorDetail, VigilNetworkError, api_error_class

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed request is retried; times in seconds. The n-th retry waits a random time between
    0 and ``min(max_delay, base_delay * 2**n)`` (full jitter), or at least what Retry-After says.
    Retries go on until ``max_retry_time`` after the first attempt (0: no retries); a Retry-After
    reaching beyond that gives up at once. ``max_retries`` also bounds their number (None: only the time)."""

    max_retries: Optional[int] = None
    base_delay: float = 0.25
    max_delay: float = 30.0
    max_retry_time: float = 600.0


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After as seconds: delta-seconds or an HTTP date."""
    if value is None or value.strip() == "":
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        date = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, date.timestamp() - (time.time() if now is None else now))


def backoff_delay(retry: int, policy: RetryPolicy) -> float:
    """Exponential backoff with full jitter: anywhere between 0 and base * 2**retry, capped at max_delay
    (clients that failed together do not retry together)."""
    ceiling = min(policy.max_delay, policy.base_delay * 2 ** min(retry, 64))
    return random.random() * ceiling


def encode_json(value: Any) -> str:
    """JSON as sent: compact; NaN refused (ValueError: it is not JSON and the server would refuse the
    whole body); values JSON cannot hold as their repr."""
    return json.dumps(value, allow_nan=False, default=repr, separators=(",", ":"))


def _error_parts(body: Any) -> Tuple[Optional[str], Optional[str], Optional[List[ErrorDetail]]]:
    """(message, code, details) of an observe ``{error, code, status, details?}`` or gate ``{error: {code, message}}`` body."""
    if not isinstance(body, dict):
        return None, None, None
    fields = cast(Dict[str, Any], body)
    error = fields.get("error")
    if isinstance(error, str):
        code, details = fields.get("code"), fields.get("details")
        return (
            error,
            code if isinstance(code, str) else None,
            cast(List[ErrorDetail], details) if isinstance(details, list) else None,
        )
    if isinstance(error, dict):
        inner = cast(Dict[str, Any], error)
        message, code, details = inner.get("message"), inner.get("code"), inner.get("details")
        return (
            message if isinstance(message, str) else None,
            code if isinstance(code, str) else None,
            cast(List[ErrorDetail], details) if isinstance(details, list) else None,
        )
    return None, None, None


class HttpTransport:
    def __init__(
        self,
        service: str,
        base_url: str,
        api_key: Optional[str],
        *,
        timeout: float = 10.0,
        retry: Optional[RetryPolicy] = None,
        headers: Optional[Mapping[str, str]] = None,
        key_variable: Optional[str] = None,
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        #: The environment variable the key comes from, named when a request without one is refused.
        self.key_variable = key_variable
        self.timeout = timeout
        #: None disables retries.
        self.retry = retry
        self.headers = dict(headers or {})

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Optional[Mapping[str, Any]] = None,
        idempotent: bool = True,
        raw_body: Optional[bytes] = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """Sends one request (retrying as configured) and answers the parsed JSON body (None when empty).
        A request that is not ``idempotent`` is retried only on an answer that stored nothing (408,
        425, 429, 5xx), never after a network error, which may have come after the server stored it;
        one with an ``idempotency_key`` is idempotent. ``raw_body``: JSON already encoded."""
        verb = method.upper()
        url = self.base_url + path
        if query:
            pairs = {k: _query_value(v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        headers: Dict[str, str] = {"accept": "application/json", **self.headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        data: Optional[bytes] = raw_body
        if body is not None:
            data = encode_json(body).encode("utf-8")
        if data is not None:
            headers["content-type"] = "application/json"
        if idempotency_key is not None:
            headers["idempotency-key"] = idempotency_key
            idempotent = True
        policy = self.retry
        deadline = time.monotonic() + (policy.max_retry_time if policy else 0.0)

        def pause(retry_number: int, retry_after: Optional[float]) -> bool:
            """Sleeps before the next retry; False when the policy's time or count is spent."""
            if policy is None or (policy.max_retries is not None and retry_number >= policy.max_retries):
                return False
            left = deadline - time.monotonic()
            # A server asking for a pause beyond the time left: give up now rather than wait to give up.
            if left <= 0 or (retry_after is not None and retry_after > left):
                return False
            delay = backoff_delay(retry_number, policy)
            if retry_after is not None:
                delay = max(delay, retry_after)
            time.sleep(min(delay, left))
            return True

        retry_number = 0
        while True:
            request = urllib.request.Request(url, data=data, headers=headers, method=verb)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return _parse(response.read())
            except urllib.error.HTTPError as answer:
                status = answer.code
                try:
                    parsed = _parse(answer.read())
                except (OSError, ValueError):
                    parsed = None
                retry_after = parse_retry_after(answer.headers.get("retry-after") if answer.headers else None)
                message, code, details = _error_parts(parsed)
                reason = f"{answer.reason}" if answer.reason else ""
                message = message or f"{self.service}: {verb} {path} answered {status} {reason}".strip()
                if status == 401 and not self.api_key and self.key_variable:
                    message = f"{self.service}: no API key was given: pass api_key= or set {self.key_variable} ({message})"
                error = api_error_class(status)(
                    message,
                    service=self.service,
                    status=status,
                    method=verb,
                    path=path,
                    code=code,
                    details=details,
                    body=parsed,
                    retry_after=retry_after,
                )
                # observe is still storing the key's first request; an observe older than its error
                # codes sends none, so there a 409 to a request with a key means the same.
                in_flight = code == "idempotency_in_flight" or (code is None and idempotency_key is not None)
                retryable = status in RETRYABLE_STATUS or (status == 409 and in_flight)
                if not retryable or not pause(retry_number, retry_after):
                    raise error from None
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as failure:
                reason_obj = getattr(failure, "reason", failure)
                timed_out = isinstance(reason_obj, (socket.timeout, TimeoutError))
                text = (
                    f"{self.service}: {verb} {path} got no answer within {self.timeout:g} s"
                    if timed_out
                    else f"{self.service}: {verb} {path} failed: {reason_obj}"
                )
                if not idempotent or not pause(retry_number, None):
                    raise VigilNetworkError(text, service=self.service, method=verb, path=path, timed_out=timed_out) from failure
            retry_number += 1


@dataclass(frozen=True)
class Service:
    """A service a client talks to: its name in errors, its default URL, and the environment
    variables its URL and API key come from when the client is not given them."""

    name: str
    default_url: str
    url_variable: str
    key_variable: str


class ServiceClient:
    """What both clients share: the transport to their ``service``. ``base_url`` and ``api_key``
    default to the service's environment variables (else its default URL, and no key); ``retry``
    (default RetryPolicy()) takes ``max_retry_time`` when that is given."""

    service: ClassVar[Service]

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 10.0,
        retry: Optional[RetryPolicy] = None,
        max_retry_time: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        service = self.service
        policy = retry or RetryPolicy()
        self._http = HttpTransport(
            service.name,
            base_url or os.environ.get(service.url_variable) or service.default_url,
            api_key if api_key is not None else os.environ.get(service.key_variable),
            timeout=timeout,
            retry=policy if max_retry_time is None else dataclasses.replace(policy, max_retry_time=max_retry_time),
            headers=headers,
            key_variable=service.key_variable,
        )

    @property
    def base_url(self) -> str:
        return self._http.base_url


def _query_value(value: Any) -> str:
    """A query parameter: lists as comma lists, as the services read them."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in cast(Sequence[Any], value))
    return str(value)


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def quote(segment: str) -> str:
    """A path parameter, percent-encoded."""
    return urllib.parse.quote(str(segment), safe="")
