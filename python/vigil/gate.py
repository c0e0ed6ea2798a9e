"""Client of the gate approval service (default http://localhost:3000). ``request_approval()`` is
the one-liner for agents: it asks, waits for the decision (a policy may decide at once, a human
later) and records the request and its outcome in the ambient observe session."""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Union, cast

from ._http import Service, ServiceClient, quote
from .errors import ApprovalTimeoutError
from .observe import current_session

DEFAULT_GATE_URL = "http://localhost:3000"

Json = Dict[str, Any]

# The observe event each decided status is recorded as (observe's approval event types).
_OUTCOME_EVENT = {"approved": "approval_granted", "denied": "approval_denied", "expired": "approval_expired"}


@dataclass(frozen=True)
class ApprovalOutcome:
    """A request as request_approval() left it; ``approved`` is true only for status ``approved``."""

    id: str
    action: str
    #: pending (only with wait=False), approved, denied or expired.
    status: str
    approved: bool
    #: ``policy:<id>``, ``api:<key name>``, ``dashboard:<name>``, ``system:expiry``; None while pending.
    decided_by: Optional[str]
    decision_reason: Optional[str]
    #: The gate's request as last read (with ``policyDecision`` when the creation answer was the last read).
    request: Json


def _outcome(request: Json) -> ApprovalOutcome:
    return ApprovalOutcome(
        id=request["id"],
        action=request["action"],
        status=request["status"],
        approved=request["status"] == "approved",
        decided_by=request.get("decidedBy"),
        decision_reason=request.get("decisionReason"),
        request=request,
    )


class GateClient(ServiceClient):
    """``base_url`` and ``api_key`` default to VIGIL_GATE_URL (else http://localhost:3000) and
    VIGIL_GATE_API_KEY; ``timeout``, ``retry`` and ``max_retry_time`` as for ObserveClient."""

    service = Service("gate", DEFAULT_GATE_URL, url_variable="VIGIL_GATE_URL", key_variable="VIGIL_GATE_API_KEY")

    # -- requests ---------------------------------------------------------------------------------

    def create_request(
        self,
        action: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        context: Optional[Mapping[str, Any]] = None,
        urgency: Optional[str] = None,
        expires_at: Union[str, datetime.datetime, None] = None,
    ) -> Json:
        """Creates a request; the policy engine may decide it at once (see ``policyDecision``)."""
        body: Json = {"action": action}
        if params is not None:
            body["params"] = dict(params)
        if context is not None:
            body["context"] = dict(context)
        if urgency is not None:
            body["urgency"] = urgency
        if expires_at is not None:
            body["expiresAt"] = expires_at.isoformat() if isinstance(expires_at, datetime.datetime) else expires_at
        # Not idempotent: a retry after a lost answer would create a second request.
        return cast(Json, self._http.request("POST", "/api/requests", body=body, idempotent=False))

    def get_request(self, request_id: str) -> Json:
        return cast(Json, self._http.request("GET", f"/api/requests/{quote(request_id)}"))

    def list_requests(self, **query: Any) -> List[Json]:
        return cast(List[Json], self._http.request("GET", "/api/requests", query=query))

    def decide(self, request_id: str, decision: str, reason: Optional[str] = None) -> Json:
        """Approves or denies a pending request (``decision`` is "approved" or "denied"); the gate derives ``decidedBy`` from the key."""
        body: Json = {"decision": decision} if reason is None else {"decision": decision, "reason": reason}
        return cast(Json, self._http.request("POST", f"/api/requests/{quote(request_id)}/decide", body=body, idempotent=False))

    def confirm(self, request_id: str, result: Optional[Mapping[str, Any]] = None) -> Json:
        """Records that an approved action was executed, with its result (once per request)."""
        return cast(Json, self._http.request("POST", f"/api/requests/{quote(request_id)}/confirm", body={"result": dict(result or {})}))

    def request_approval(
        self,
        action: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        context: Optional[Mapping[str, Any]] = None,
        urgency: Optional[str] = None,
        expires_at: Union[str, datetime.datetime, None] = None,
        wait: bool = True,
        timeout: float = 300.0,
        poll_interval: float = 0.5,
        max_poll_interval: float = 5.0,
        on_pending: Optional[Callable[[Json], None]] = None,
        record: bool = True,
    ) -> ApprovalOutcome:
        """Creates a request and, when no policy decided it at once and ``wait`` is true, polls it
        (every ``poll_interval`` seconds, growing by half up to ``max_poll_interval``) until it is
        decided. Raises ApprovalTimeoutError after ``timeout`` seconds (the request stays pending:
        give it ``expires_at`` to have it expire too).

        Inside an observe session (``with client.session(...)``), the request carries the session's
        ``sessionId``/``agentId`` in its context and, with ``record``, the session gets
        approval_requested and then approval_granted, approval_denied or approval_expired, and the
        context says ``recordedByAgent: true`` so that a gate forwarding its events to observe
        (OBSERVE_URL) sends no second copy. With ``record=False`` the session records nothing and
        such a gate records the request in the session instead."""
        session = current_session()
        merged_context: Json = dict(context or {})
        if session is not None:
            merged_context.setdefault("sessionId", session.id)
            merged_context.setdefault("agentId", session.agent_id)
            if record:
                merged_context["recordedByAgent"] = True
        created = self.create_request(
            action,
            params,
            context=merged_context if merged_context else None,
            urgency=urgency,
            expires_at=expires_at,
        )
        if session is not None and record:
            session.event(
                "approval_requested",
                {"requestId": created["id"], "action": action, "params": created.get("params", {}), "urgency": created.get("urgency", "normal")},
            )
        if created["status"] != "pending" or not wait:
            decided = created
        else:
            decided = self.wait_for_decision(
                created["id"], timeout=timeout, poll_interval=poll_interval, max_poll_interval=max_poll_interval, on_pending=on_pending, known=created
            )
        outcome = _outcome(decided)
        if session is not None and record and outcome.status in _OUTCOME_EVENT:
            payload: Json = {"requestId": outcome.id, "action": outcome.action, "decidedBy": outcome.decided_by or "unknown"}
            if outcome.decision_reason is not None:
                payload["reason"] = outcome.decision_reason
            session.event(_OUTCOME_EVENT[outcome.status], payload, severity=None if outcome.approved else "warn")
        return outcome

    def wait_for_decision(
        self,
        request_id: str,
        *,
        timeout: float = 300.0,
        poll_interval: float = 0.5,
        max_poll_interval: float = 5.0,
        on_pending: Optional[Callable[[Json], None]] = None,
        known: Optional[Json] = None,
    ) -> Json:
        """Polls an existing request until it is no longer pending and answers it (see request_approval)."""
        interval = min(poll_interval, max_poll_interval)
        started = time.monotonic()
        current = known if known is not None else self.get_request(request_id)
        if current["status"] == "pending" and on_pending is not None:
            on_pending(current)
        while current["status"] == "pending":
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                raise ApprovalTimeoutError(request_id, timeout, current["status"])
            time.sleep(min(interval, remaining))
            interval = min(max_poll_interval, interval * 1.5)
            current = self.get_request(request_id)
        return current

    # -- administration (admin scope) -------------------------------------------------------------

    def create_policy(self, policy: Mapping[str, Any]) -> Json:
        """POST /api/policies with the body as the gate takes it: ``{name, priority?, enabled?, rules}``."""
        return cast(Json, self._http.request("POST", "/api/policies", body=dict(policy)))

    def delete_policy(self, policy_id: str) -> Json:
        return cast(Json, self._http.request("DELETE", f"/api/policies/{quote(policy_id)}"))

    def health(self) -> Json:
        return cast(Json, self._http.request("GET", "/health"))
