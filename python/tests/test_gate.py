from __future__ import annotations

import threading
import time
import unittest
from typing import Any, Dict, List

import vigil
from _support import GATE_ADMIN_KEY, PREFIX, needs_vigil, session_id, stored_events


@needs_vigil
class ApprovalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.admin = vigil.GateClient(api_key=GATE_ADMIN_KEY)
        cls.actions = {name: f"{PREFIX}.{name}" for name in ("auto", "deny", "human")}
        policy = cls.admin.create_policy(
            {
                "name": f"{PREFIX} python client",
                "rules": [
                    {"match": {"action": cls.actions["auto"]}, "decision": "auto_approve"},
                    {"match": {"action": cls.actions["deny"]}, "decision": "auto_deny"},
                    {"match": {"action": cls.actions["human"]}, "decision": "route_to_human"},
                ],
            }
        )
        cls.policy_id = policy["id"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.admin.delete_policy(cls.policy_id)

    def setUp(self) -> None:
        self.observe = vigil.ObserveClient(flush_interval=60)
        self.addCleanup(self.observe.close)
        # The agent's key (request:create, request:read) from VIGIL_GATE_API_KEY.
        self.gate = vigil.GateClient()

    def test_a_policy_approves_at_once_and_the_session_records_it(self) -> None:
        sid = session_id("approval", "auto")
        with self.observe.session(agent_id="py-agent", session_id=sid) as session:
            outcome = self.gate.request_approval(self.actions["auto"], {"amount": 5}, urgency="high")
        self.assertTrue(outcome.approved)
        self.assertEqual(outcome.status, "approved")
        self.assertEqual(outcome.decided_by, f"policy:{self.policy_id}")
        stored = self.gate.get_request(outcome.id)
        self.assertEqual(stored["context"], {"sessionId": session.id, "agentId": "py-agent", "recordedByAgent": True})
        events = stored_events(sid)
        self.assertEqual([e["eventType"] for e in events], ["session_started", "approval_requested", "approval_granted", "session_ended"])
        self.assertEqual(events[1]["payload"], {"requestId": outcome.id, "action": self.actions["auto"], "params": {"amount": 5}, "urgency": "high"})
        self.assertIsNotNone(outcome.decision_reason)
        self.assertEqual(
            events[2]["payload"],
            {"requestId": outcome.id, "action": self.actions["auto"], "decidedBy": f"policy:{self.policy_id}", "reason": outcome.decision_reason},
        )

    def test_a_policy_denies_and_the_session_records_it(self) -> None:
        sid = session_id("approval", "deny")
        with self.observe.session(agent_id="py-agent", session_id=sid):
            outcome = self.gate.request_approval(self.actions["deny"], {"table": "users"})
        self.assertFalse(outcome.approved)
        self.assertEqual(outcome.status, "denied")
        events = stored_events(sid)
        self.assertEqual([e["eventType"] for e in events], ["session_started", "approval_requested", "approval_denied", "session_ended"])
        self.assertEqual(events[2]["severity"], "warn")
        self.assertEqual(events[2]["payload"]["decidedBy"], f"policy:{self.policy_id}")

    def test_a_pending_request_is_waited_for_until_a_human_decides(self) -> None:
        sid = session_id("approval", "human")
        pending: List[Dict[str, Any]] = []

        def decide_when_pending() -> None:
            while not pending:
                time.sleep(0.02)
            self.admin.decide(pending[0]["id"], "denied", "not on a Friday")

        human = threading.Thread(target=decide_when_pending)
        human.start()
        with self.observe.session(agent_id="py-agent", session_id=sid):
            outcome = self.gate.request_approval(self.actions["human"], {"n": 1}, poll_interval=0.05, on_pending=pending.append, timeout=30)
        human.join()
        self.assertEqual(len(pending), 1)
        self.assertEqual((outcome.status, outcome.approved, outcome.decision_reason), ("denied", False, "not on a Friday"))
        self.assertTrue((outcome.decided_by or "").startswith("api:"))
        events = stored_events(sid)
        self.assertEqual([e["eventType"] for e in events], ["session_started", "approval_requested", "approval_denied", "session_ended"])
        self.assertEqual(events[2]["payload"]["reason"], "not on a Friday")

    def test_waiting_gives_up_after_the_timeout_and_wait_false_answers_at_once(self) -> None:
        with self.assertRaises(vigil.ApprovalTimeoutError) as raised:
            self.gate.request_approval(self.actions["human"], timeout=0.3, poll_interval=0.05)
        self.assertEqual(self.gate.get_request(raised.exception.request_id)["status"], "pending")
        outcome = self.gate.request_approval(self.actions["human"], wait=False)
        self.assertEqual((outcome.status, outcome.approved, outcome.decided_by), ("pending", False, None))

    def test_outside_a_session_nothing_is_recorded(self) -> None:
        outcome = self.gate.request_approval(self.actions["auto"])
        self.assertTrue(outcome.approved)
        self.assertEqual(self.gate.get_request(outcome.id)["context"], {})
        self.assertEqual(self.observe.pending_events, 0)


if __name__ == "__main__":
    unittest.main()
