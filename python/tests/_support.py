"""What the tests share: the running Vigil they are pointed at (scripts/python-client.test.ts
starts observe and the gate and sets the environment), a run-unique session id prefix, and reads
of what observe stored."""

from __future__ import annotations

import json
import os
import time
import unittest
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional, TypeVar

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OBSERVE_URL = os.environ.get("VIGIL_URL", "")
OBSERVE_KEY = os.environ.get("VIGIL_API_KEY", "")
GATE_URL = os.environ.get("VIGIL_GATE_URL", "")
GATE_KEY = os.environ.get("VIGIL_GATE_API_KEY", "")
GATE_ADMIN_KEY = os.environ.get("VIGIL_GATE_ADMIN_KEY", "")
#: Every session id a test writes starts with it, so the node test can find them.
PREFIX = os.environ.get("VIGIL_TEST_PREFIX", f"py-{int(time.time() * 1000)}")

needs_vigil = unittest.skipUnless(
    OBSERVE_URL and OBSERVE_KEY and GATE_URL and GATE_KEY and GATE_ADMIN_KEY,
    "VIGIL_URL, VIGIL_API_KEY, VIGIL_GATE_URL, VIGIL_GATE_API_KEY and VIGIL_GATE_ADMIN_KEY name a running Vigil (npm test sets them)",
)

T = TypeVar("T")


def observe_get(path: str, **query: Any) -> Any:
    """A GET against observe with the test key, independent of the client under test."""
    url = OBSERVE_URL.rstrip("/") + path + ("?" + urllib.parse.urlencode(query) if query else "")
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {OBSERVE_KEY}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def stored_events(session_id: str) -> List[Dict[str, Any]]:
    """The session's events as observe stored them, oldest first."""
    return list(observe_get("/api/events", sessionId=session_id, order="asc", limit=500)["events"])


def eventually(probe: Callable[[], T], accept: Callable[[T], bool], timeout: float = 10.0) -> T:
    """Polls ``probe`` until ``accept`` likes its answer; fails with the last answer after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {timeout} s; last value: {value!r}")
        time.sleep(0.05)


def session_id(name: str, suffix: Optional[str] = None) -> str:
    return f"{PREFIX}-{name}" + (f"-{suffix}" if suffix else "")
