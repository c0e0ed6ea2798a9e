"""Event batching on a background thread: events are queued and sent in batches, one batch at a
time and in order (so each session's chain follows the order the agent emitted), when
``batch_size`` events are waiting or ``flush_interval`` seconds after the first event of a batch
was queued, on flush()/close(), and at interpreter exit (atexit). A process killed by a signal
or ended with os._exit() cannot send what is still queued.

A batch is frozen when it is taken from the queue and gets one idempotency key, which every retry
of it repeats (the transport retries for up to ``max_retry_time``); events queued meanwhile go to
later batches. The queue is bounded by count and by the bytes of the events' JSON; nothing is
dropped without ``on_error`` hearing how many events and why (VigilDeliveryError.count, .reason)."""

from __future__ import annotations

import atexit
import collections
import re
import sys
import threading
import time
import uuid
from typing import Any, Callable, Deque, List, Optional, Set, Tuple

from ._http import RETRYABLE_STATUS, encode_json
from .errors import (
    EXIT,
    QUEUE_FULL,
    REFUSED,
    RETRIES_EXHAUSTED,
    SEVERAL,
    UNSERIALIZABLE,
    VigilApiError,
    VigilClosedError,
    VigilDeliveryError,
    VigilValidationError,
)

Event = Any
#: Sends one batch: the events' JSON texts, in order, and the batch's idempotency key. What it
#: answers is ignored: a return is success, an exception a failure (after the transport's retries).
Sender = Callable[[List[str], str], object]
ErrorHandler = Callable[[VigilDeliveryError], None]

DEFAULT_MAX_QUEUE_BYTES = 64 * 1024 * 1024


class _Queued:
    """A queued event with its sequence number (flush() waits by them) and its JSON text."""

    __slots__ = ("seq", "event", "text")

    def __init__(self, seq: int, event: Event, text: str) -> None:
        self.seq = seq
        self.event = event
        self.text = text

_EVENT_INDEX = re.compile(r"^events\.(\d+)(?:\.|$)")


def _refused_indices(error: VigilValidationError, size: int) -> Set[int]:
    """Indices of the batch's events a validation error names (``events.3.payload.callId`` -> 3)."""
    indices: Set[int] = set()
    for detail in error.details:
        match = _EVENT_INDEX.match(str(detail.get("path", "")))
        if match and int(match.group(1)) < size:
            indices.add(int(match.group(1)))
    return indices


def _failure_reason(error: BaseException) -> str:
    """A final answer that stores nothing whatever the retries (4xx) is a refusal; the rest ran out of time."""
    if isinstance(error, VigilApiError) and error.status < 500 and error.status not in RETRYABLE_STATUS and error.status != 409:
        return REFUSED
    return RETRIES_EXHAUSTED


def _warn(error: VigilDeliveryError) -> None:
    sys.stderr.write(f"vigil: {error}\n")


class EventQueue:
    def __init__(
        self,
        send: Sender,
        *,
        batch_size: int,
        flush_interval: float,
        max_queue_size: int,
        max_queue_bytes: int,
        flush_on_exit: bool,
        exit_timeout: float,
        on_error: Optional[ErrorHandler],
    ) -> None:
        """The settings are ObserveClient's (its signature holds their defaults)."""
        self._send = send
        self.batch_size = min(1000, max(1, int(batch_size)))
        self.flush_interval = max(0.0, flush_interval)
        self.max_queue_size = max(self.batch_size, max_queue_size)
        self.max_queue_bytes = max(1, int(max_queue_bytes))
        self.exit_timeout = exit_timeout
        self._on_error = on_error or _warn
        self._lock = threading.Condition()
        self._queue: Deque[_Queued] = collections.deque()
        self._queued_bytes = 0
        #: The batch being sent (and maybe retried), until it is stored or given up.
        self._sending: List[_Queued] = []
        self._pushed = 0
        self._handled = 0
        self._flush_upto = 0
        self._deadline: Optional[float] = None
        self._failures: Deque[Tuple[int, VigilDeliveryError]] = collections.deque(maxlen=1000)
        self._closed = False
        self._stopping = False
        self._worker: Optional[threading.Thread] = None
        self._hooked = False
        self._flush_on_exit = flush_on_exit

    @property
    def size(self) -> int:
        """Events queued and not yet handed to a request."""
        with self._lock:
            return len(self._queue)

    def push(self, event: Event) -> None:
        try:
            text = encode_json(event)
        except ValueError as error:
            with self._lock:
                if self._closed:
                    raise VigilClosedError("The client is closed: no more events can be sent") from None
            self._report(VigilDeliveryError(f"1 event dropped: it is not JSON ({error})", [event], error, reason=UNSERIALIZABLE))
            return
        with self._lock:
            if self._closed:
                raise VigilClosedError("The client is closed: no more events can be sent")
            if len(self._queue) >= self.max_queue_size:
                dropped: Optional[VigilDeliveryError] = VigilDeliveryError(
                    f"1 event dropped: the event queue is full ({self.max_queue_size} events)", [event], reason=QUEUE_FULL
                )
            elif self._queued_bytes + len(text) > self.max_queue_bytes:
                dropped = VigilDeliveryError(
                    f"1 event dropped: the event queue is full ({self.max_queue_bytes} bytes of events; this one has {len(text)})",
                    [event],
                    reason=QUEUE_FULL,
                )
            else:
                dropped = None
                self._pushed += 1
                self._queue.append(_Queued(self._pushed, event, text))
                self._queued_bytes += len(text)
                if self._deadline is None:
                    self._deadline = time.monotonic() + self.flush_interval
                self._start()
                self._lock.notify_all()
        if dropped is not None:
            self._report(dropped)

    def flush(self, timeout: Optional[float] = None) -> None:
        """Sends everything queued so far and waits until it, and every batch already in flight, is
        stored or given up. Raises VigilDeliveryError when a batch of these events failed (the
        failure was also reported to on_error), TimeoutError when ``timeout`` seconds pass first."""
        with self._lock:
            start = self._handled
            target = self._pushed
            self._flush_upto = max(self._flush_upto, target)
            self._lock.notify_all()
            if not self._lock.wait_for(lambda: self._handled >= target, timeout):
                raise TimeoutError(f"vigil: flush did not finish within {timeout:g} s ({len(self._queue)} events still queued)")
            failures = [f for last, f in self._failures if start < last <= target]
        if len(failures) == 1:
            raise failures[0]
        if failures:
            reasons = {f.reason for f in failures}
            raise VigilDeliveryError(
                f"{len(failures)} batches were not stored: " + "; ".join(str(f) for f in failures),
                [e for f in failures for e in f.events],
                reason=reasons.pop() if len(reasons) == 1 else SEVERAL,
            )

    def close(self, timeout: Optional[float] = None) -> None:
        """Flushes, then refuses further events and stops the thread. Raises only what flush() raises:
        VigilDeliveryError (already reported to on_error) or TimeoutError."""
        try:
            self.flush(timeout)
        finally:
            with self._lock:
                self._closed = True
                self._stopping = True
                self._lock.notify_all()
            self._unhook_exit()

    # ---------------------------------------------------------------------------------------------

    def _report(self, error: VigilDeliveryError) -> None:
        try:
            self._on_error(error)
        except Exception:  # noqa: BLE001 - a raising handler must not break delivery
            pass

    def _start(self) -> None:
        """Starts the sending thread (and the exit hook) with the first event; called under the lock."""
        if self._worker is not None:
            return
        # Daemon: a forgotten client never keeps the interpreter alive; the exit hook sends what is left.
        self._worker = threading.Thread(target=self._run, name="vigil-batcher", daemon=True)
        self._worker.start()
        if self._flush_on_exit:
            self._hooked = True
            atexit.register(self._flush_at_exit)

    def _unhook_exit(self) -> None:
        if self._hooked:
            atexit.unregister(self._flush_at_exit)
            self._hooked = False

    def _flush_at_exit(self) -> None:
        try:
            self.close(self.exit_timeout)
        except VigilDeliveryError:
            pass  # already reported
        except TimeoutError:
            with self._lock:
                # The batch still being retried dies with the interpreter too (its daemon thread).
                lost = [queued.event for queued in self._sending] + [queued.event for queued in self._queue]
                self._queue.clear()
                self._queued_bytes = 0
            if lost:
                self._report(
                    VigilDeliveryError(f"{len(lost)} events were not stored: the interpreter exited before they were delivered", lost, reason=EXIT)
                )

    def _next_batch(self) -> Optional[List[_Queued]]:
        """Waits for a batch that is due; None when stopping with nothing left."""
        with self._lock:
            while True:
                if self._queue:
                    due = (
                        len(self._queue) >= self.batch_size
                        or self._queue[0].seq <= self._flush_upto
                        or self._stopping
                        or (self._deadline is not None and time.monotonic() >= self._deadline)
                    )
                    if due:
                        count = min(self.batch_size, len(self._queue))
                        batch = [self._queue.popleft() for _ in range(count)]
                        self._queued_bytes -= sum(len(queued.text) for queued in batch)
                        self._sending = batch
                        if not self._queue:
                            self._deadline = None
                        return batch
                elif self._stopping:
                    return None
                wait = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
                self._lock.wait(wait)

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            failure = self._deliver(batch)
            with self._lock:
                if failure is not None:
                    self._failures.append((batch[-1].seq, failure))
                self._sending = []
                self._handled = batch[-1].seq
                self._lock.notify_all()

    def _deliver(self, batch: List[_Queued]) -> Optional[VigilDeliveryError]:
        """Sends one frozen batch under one idempotency key; events the server names as invalid are
        dropped (and reported) and the rest sent again once, as a new batch with a new key."""
        queued = batch
        refused: Optional[VigilDeliveryError] = None
        round_number = 0
        while True:
            events = [entry.event for entry in queued]
            try:
                self._send([entry.text for entry in queued], str(uuid.uuid4()))
                return refused
            except Exception as error:  # noqa: BLE001 - every failure is reported, none kills the thread
                if round_number == 0 and isinstance(error, VigilValidationError):
                    bad = _refused_indices(error, len(events))
                    if 0 < len(bad) < len(events):
                        refused = VigilDeliveryError(
                            f"observe refused {len(bad)} of {len(events)} events: {error}",
                            [e for i, e in enumerate(events) if i in bad],
                            error,
                            reason=REFUSED,
                        )
                        self._report(refused)
                        queued = [entry for i, entry in enumerate(queued) if i not in bad]
                        round_number += 1
                        continue
                failure = VigilDeliveryError(f"{len(events)} events were not stored: {error}", events, error, reason=_failure_reason(error))
                self._report(failure)
                return failure
