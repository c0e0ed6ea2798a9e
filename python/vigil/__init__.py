"""Vigil client for Python: observe (events, sessions, tools, LLM calls) and the approval gate."""

from ._http import RetryPolicy, parse_retry_after
from .errors import (
    ApprovalTimeoutError,
    ErrorDetail,
    VigilApiError,
    VigilAuthenticationError,
    VigilClosedError,
    VigilConflictError,
    VigilDeliveryError,
    VigilError,
    VigilNetworkError,
    VigilNotFoundError,
    VigilPermissionError,
    VigilRateLimitError,
    VigilServerError,
    VigilValidationError,
)
from .gate import DEFAULT_GATE_URL, ApprovalOutcome, GateClient
from .observe import (
    DEFAULT_OBSERVE_URL,
    LlmCall,
    LlmResponseRecord,
    ObserveClient,
    Session,
    current_session,
    observe_tool,
    record_llm_call,
    record_llm_response,
)
from .pricing import ModelPrice, PriceTable

__version__ = "0.1.0"

__all__ = [
    "ApprovalOutcome",
    "ApprovalTimeoutError",
    "DEFAULT_GATE_URL",
    "DEFAULT_OBSERVE_URL",
    "ErrorDetail",
    "GateClient",
    "LlmCall",
    "LlmResponseRecord",
    "ModelPrice",
    "ObserveClient",
    "PriceTable",
    "RetryPolicy",
    "Session",
    "VigilApiError",
    "VigilAuthenticationError",
    "VigilClosedError",
    "VigilConflictError",
    "VigilDeliveryError",
    "VigilError",
    "VigilNetworkError",
    "VigilNotFoundError",
    "VigilPermissionError",
    "VigilRateLimitError",
    "VigilServerError",
    "VigilValidationError",
    "current_session",
    "observe_tool",
    "parse_retry_after",
    "record_llm_call",
    "record_llm_response",
]
