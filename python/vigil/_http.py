"""The HTTP transport both clients share: bearer authentication, JSON bodies, a timeout on every
attempt, and retries with exponential backoff (and jitter) on 408, 429, 5xx and network errors,
honouring Retry-After. Retries make delivery at-least-once: a request whose connection broke after
the server committed it is sent again."""

from __future__ import annotations

import email.utils
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, cast

from .errors import ErrorDetail, VigilNetworkError, api_error_class

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Retries after the first attempt; delays in seconds."""

    max_retries: int = 3
    base_delay: float = 0.25
    #: A Retry-After longer than this gives up at once rather than hang.
    max_delay: float = 30.0


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
    """Exponential backoff with "equal jitter": between half and all of base * 2**retry, capped."""
    ceiling = min(policy.max_delay, policy.base_delay * 2**retry)
    return ceiling / 2 + random.random() * (ceiling / 2)


def _error_parts(body: Any) -> Tuple[Optional[str], Optional[str], Optional[List[ErrorDetail]]]:
    """(message, code, details) of an observe ``{error, status, details?}`` or gate ``{error: {code, message}}`` body."""
    if not isinstance(body, dict):
        return None, None, None
    fields = cast(Dict[str, Any], body)
    error = fields.get("error")
    if isinstance(error, str):
        details = fields.get("details")
        return error, None, cast(List[ErrorDetail], details) if isinstance(details, list) else None
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
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
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
    ) -> Any:
        """Sends one request (retrying as configured) and answers the parsed JSON body (None when empty).
        A request that is not ``idempotent`` is retried only on an answer that stored nothing (408,
        429, 5xx), never after a network error, which may have come after the server stored it."""
        verb = method.upper()
        url = self.base_url + path
        if query:
            pairs = {k: _query_value(v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        headers: Dict[str, str] = {"accept": "application/json", **self.headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        data: Optional[bytes] = None
        if body is not None:
            headers["content-type"] = "application/json"
            # allow_nan=False: NaN is not JSON and the server would refuse the whole body.
            data = json.dumps(body, allow_nan=False, default=repr, separators=(",", ":")).encode("utf-8")
        policy = self.retry
        max_retries = policy.max_retries if policy else 0

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
                error = api_error_class(status)(
                    message or f"{self.service}: {verb} {path} answered {status} {reason}".strip(),
                    service=self.service,
                    status=status,
                    method=verb,
                    path=path,
                    code=code,
                    details=details,
                    body=parsed,
                    retry_after=retry_after,
                )
                if policy is None or retry_number >= max_retries or status not in RETRYABLE_STATUS:
                    raise error from None
                delay = retry_after if retry_after is not None else backoff_delay(retry_number, policy)
                # A server asking for a longer pause than the policy allows: give up now rather than hang.
                if delay > policy.max_delay:
                    raise error from None
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as failure:
                reason_obj = getattr(failure, "reason", failure)
                timed_out = isinstance(reason_obj, (socket.timeout, TimeoutError))
                text = (
                    f"{self.service}: {verb} {path} got no answer within {self.timeout:g} s"
                    if timed_out
                    else f"{self.service}: {verb} {path} failed: {reason_obj}"
                )
                if policy is None or retry_number >= max_retries or not idempotent:
                    raise VigilNetworkError(text, service=self.service, method=verb, path=path, timed_out=timed_out) from failure
                delay = backoff_delay(retry_number, policy)
            time.sleep(delay)
            retry_number += 1


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
