"""A Python agent recorded in Vigil: a session, two traced tools, an LLM call with its cost, and an
approval from the gate before the risky step. No LLM is needed: the reply is scripted.

Run it against `npm start`, from the repository root:

    VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate agent key> PYTHONPATH=python python3 examples/python_agent.py

(or `pip install ./python` once and drop PYTHONPATH). The gate key needs request:create and
request:read; the refund of 20 is small, and the policy of docs/guide/curl.md approves payments under 100 at once —
without a policy the request waits for a human (the dashboard's Approvals page).

It says "Stored session ..." only when every event was stored; otherwise it names how many were
not and why, and exits with status 1. A missing key or an error of either service ends with one
line naming it, not a traceback.
"""

import os
import sys
import time
from typing import List

import vigil

#: The keys this example needs: the variable, and what it is.
REQUIRED_KEYS = {
    "VIGIL_API_KEY": "an observe key with the ingest scope",
    "VIGIL_GATE_API_KEY": "a gate key with the request:create and request:read scopes",
}

#: What observe did not store, as on_error reports it (the client never raises it from track()).
not_stored: List[vigil.VigilDeliveryError] = []


@vigil.observe_tool
def lookup_order(order_id: str) -> dict:
    time.sleep(0.02)
    return {"orderId": order_id, "item": "milk frother", "amount": 20}


@vigil.observe_tool(name="issue_refund")
def refund(order_id: str, amount: int) -> dict:
    return {"refundId": f"rf_{order_id}", "amount": amount}


def main() -> int:
    missing = [f"{name} ({what})" for name, what in REQUIRED_KEYS.items() if not os.environ.get(name)]
    if missing:
        print(f"Set {' and '.join(missing)}: see the docstring of {os.path.basename(__file__)}", file=sys.stderr)
        return 2
    observe = vigil.ObserveClient(on_error=not_stored.append)  # VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
    gate = vigil.GateClient()  # VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY
    try:
        session = run(observe, gate)
    except vigil.VigilError as error:
        print(f"Stopped: {error}", file=sys.stderr)
        return 1
    finally:
        try:
            observe.close()
        except vigil.VigilDeliveryError:
            pass  # already in not_stored
    lost = sum(error.count for error in not_stored)
    if lost:
        reasons = ", ".join(sorted({error.reason for error in not_stored}))
        print(f"Session {session.id}: {lost} events were not stored ({reasons}); see the messages above", file=sys.stderr)
        return 1
    print(f"Stored session {session.id}")
    return 0


def run(observe: vigil.ObserveClient, gate: vigil.GateClient) -> vigil.Session:
    with observe.session(agent_id="python-refund-agent", tags=["example"]) as session:
        print(f"Session {session.id} started")
        order = lookup_order("2071")
        call = vigil.record_llm_call("openai", "gpt-4o-mini", [{"role": "user", "content": "Refund order 2071, it broke."}])
        reply = "The order qualifies; I will refund it."
        priced = vigil.record_llm_response(call, reply, input_tokens=420, output_tokens=35)
        print(f"LLM: {reply} (${priced.cost_usd:.6f})")
        outcome = gate.request_approval(
            "pay",
            {"amount": order["amount"], "to": "customer", "orderId": "2071"},
            timeout=600,
            on_pending=lambda request: print(f"Waiting for a human to decide request {request['id']} (dashboard → Approvals)"),
        )
        print(f"Refund {outcome.status} by {outcome.decided_by}")
        if outcome.approved:
            print(f"Refunded: {refund('2071', order['amount'])}")
    return session


if __name__ == "__main__":
    sys.exit(main())
