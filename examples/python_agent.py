"""A Python agent recorded in Vigil: a session, two traced tools, an LLM call with its cost, and an
approval from the gate before the risky step. No LLM is needed: the reply is scripted.

Run it against `npm start`, from the repository root:

    VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate agent key> PYTHONPATH=python python3 examples/python_agent.py

(or `pip install ./python` once and drop PYTHONPATH). The gate key needs request:create and
request:read; the refund of 20 is small, and the README's policy approves payments under 100 at once —
without a policy the request waits for a human (the dashboard's Approvals page).
"""

import time

import vigil

observe = vigil.ObserveClient()  # VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
gate = vigil.GateClient()  # VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY


@vigil.observe_tool
def lookup_order(order_id: str) -> dict:
    time.sleep(0.02)
    return {"orderId": order_id, "item": "milk frother", "amount": 20}


@vigil.observe_tool(name="issue_refund")
def refund(order_id: str, amount: int) -> dict:
    return {"refundId": f"rf_{order_id}", "amount": amount}


def main() -> None:
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
    print(f"Stored session {session.id}")


if __name__ == "__main__":
    main()
