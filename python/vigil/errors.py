"""Every error the client raises is a VigilError.

An HTTP answer outside 2xx is a VigilApiError (or one of its per-status subclasses) whose message is
the server's own: observe answers ``{"error", "status", "details"?}``, the gate
``{"error": {"code", "message", "details"?}}``.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, TypedDict


class ErrorDetail(TypedDict):
    """One field-level problem of a validation error, e.g. ``{"path": "events.3.payload.callId", ...}``."""

    path: str
    message: str


class VigilError(Exception):
    """Base class of every error of this package."""


class VigilApiError(VigilError):
    """The server answered with a non-2xx status."""

    def __init__(
        self,
        message: str,
        *,
        service: str,
        status: int,
        method: str,
        path: str,
        code: Optional[str] = None,
        details: Optional[List[ErrorDetail]] = None,
        body: Any = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.service = service
        self.status = status
        self.method = method
        self.path = path
        #: The error's code: the gate's ``error.code`` (``bad_request``, ``conflict``, ...), observe's
        #: ``code`` (``session_not_found``, ...; None from servers older than observe's codes).
        self.code = code
        self.details: List[ErrorDetail] = details or []
        #: The parsed response body (or its text when it was not JSON).
        self.body = body
        #: Seconds from the Retry-After header, when the server sent one.
        self.retry_after = retry_after


class VigilValidationError(VigilApiError):
    """400: the request was invalid; ``details`` lists the offending fields when the server named them."""


class VigilAuthenticationError(VigilApiError):
    """401: missing or invalid API key."""


class VigilPermissionError(VigilApiError):
    """403: the key lacks the scope the route needs."""


class VigilNotFoundError(VigilApiError):
    """404: no such resource (or route)."""


class VigilConflictError(VigilApiError):
    """409: the resource is not in a state that allows the change (e.g. a request already decided)."""


class VigilRateLimitError(VigilApiError):
    """429: rate limited; ``retry_after`` says when to try again."""


class VigilServerError(VigilApiError):
    """5xx: the server failed or a dependency is unavailable."""


_BY_STATUS = {
    400: VigilValidationError,
    401: VigilAuthenticationError,
    403: VigilPermissionError,
    404: VigilNotFoundError,
    409: VigilConflictError,
    429: VigilRateLimitError,
}


def api_error_class(status: int) -> type:
    """The VigilApiError subclass for an HTTP status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return VigilServerError if status >= 500 else VigilApiError


class VigilNetworkError(VigilError):
    """No HTTP answer: connection refused or reset, DNS failure, or the per-attempt timeout."""

    def __init__(self, message: str, *, service: str, method: str, path: str, timed_out: bool) -> None:
        super().__init__(message)
        self.service = service
        self.method = method
        self.path = path
        self.timed_out = timed_out


class ApprovalTimeoutError(VigilError):
    """request_approval() gave up waiting; the request stays as it is on the gate (normally pending)."""

    def __init__(self, request_id: str, waited: float, last_status: str) -> None:
        super().__init__(f"No decision on approval request {request_id} within {waited:g} s (status {last_status})")
        self.request_id = request_id
        self.waited = waited
        self.last_status = last_status


class VigilClosedError(VigilError):
    """The client was closed; it sends nothing more."""


#: Why events were dropped (VigilDeliveryError.reason).
QUEUE_FULL = "queue_full"
UNSERIALIZABLE = "unserializable"
REFUSED = "refused"
RETRIES_EXHAUSTED = "retries_exhausted"
EXIT = "exit"
SEVERAL = "several"


class VigilDeliveryError(VigilError):
    """Events that were not stored, reported to ``on_error``: ``count`` of them, and why (``reason``):

    - ``queue_full``: the queue held ``max_queue_size`` events or ``max_queue_bytes`` of them;
    - ``unserializable``: the event is not JSON (NaN or infinity);
    - ``refused``: observe refused them (invalid events, a missing or wrong key: a 4xx not retried);
    - ``retries_exhausted``: no success within ``max_retry_time`` (server down, network errors, 5xx);
    - ``exit``: the interpreter exited before they were sent;
    - ``several``: flush() raising for batches that failed for different reasons.
    """

    def __init__(self, message: str, events: Sequence[Any], cause: Optional[BaseException] = None, *, reason: str) -> None:
        super().__init__(message)
        #: The events that were not stored.
        self.events = list(events)
        self.reason = reason
        self.__cause__ = cause

    @property
    def count(self) -> int:
        """How many events were not stored."""
        return len(self.events)
