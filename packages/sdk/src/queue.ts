/**
 * Event batching: events are queued and sent by one sender, one request at a time and in order
 * (so each session's chain follows the order the agent emitted): at once when `batchSize` events
 * are waiting, else `flushIntervalMs` after the first, and on flush()/close(). A request carries
 * everything waiting, up to 1000 events (observe's batch limit): while one is in flight the next
 * fills, so a slow server gets fewer, larger batches instead of a growing backlog of small ones.
 *
 * A batch is frozen when it is first sent: its events and its Idempotency-Key (a random UUID) stay
 * the same through every retry, so a batch whose answer was lost is stored once. Retries go on for
 * `maxRetryTimeMs` (ride out a restart or a short database outage) while new events wait in the
 * queue, bounded by count and bytes. Nothing is dropped without onError hearing how many and why.
 * Sending on process exit, and the disk spool that survives a crash, are Node's business:
 * `@vigil/sdk/node` adds them (through QueueJournal).
 */
import { VigilApiError, VigilClosedError, VigilDeliveryError, VigilValidationError, type DeliveryFailureReason, type VigilError } from './errors.ts';
import { retryableAnswer } from './http.ts';
import { newId } from './runtime.ts';

export interface BatchingOptions {
  /** Events waiting that are sent at once (default 100, 1 to 1000); a request carries up to 1000. */
  batchSize?: number;
  /** Longest time an event waits in the queue (default 1000 ms). */
  flushIntervalMs?: number;
  /**
   * Events waiting at most (beside the up to 1000 of the request in flight) while the server is
   * slow or unreachable; further events are dropped and reported (default 100,000: the byte bound is the real limit).
   */
  maxQueueSize?: number;
  /** Serialized bytes (JSON characters) of the events waiting at most, beside maxQueueSize (default 64 MiB). */
  maxQueueBytes?: number;
  /**
   * How long a batch is retried (network errors, timeouts, 408, 409 in flight, 425, 429, 5xx),
   * from its first attempt: full-jitter backoff from 250 ms capped at 30 s, honouring Retry-After
   * (default 10 minutes; 0: no retries). Then its events are dropped and reported.
   */
  maxRetryTimeMs?: number;
  /**
   * Receives every delivery failure exactly once, whatever triggered the send: a
   * VigilDeliveryError with the `count` of events dropped and the `reason`. Default: a summarising
   * console.warn (one short line per failure, at most one line per 10 s; see defaultErrorReporter).
   */
  onError?: (error: VigilError) => void;
}

/** What close() resolves with (it never rejects): counts since the client was created. */
export interface CloseResult {
  /** Events observe stored (or had stored: an idempotent replay). */
  stored: number;
  /** Events dropped, each already reported to onError. */
  dropped: number;
  /** Events left in the disk spool, sent at the next start (`@vigil/sdk/node` with `spoolDir`; else 0). */
  spooled: number;
}

export interface CloseOptions {
  /**
   * Longest wait for what is queued and in flight (default: as long as the retries go on,
   * maxRetryTimeMs). Then the request in flight is abandoned and what is unsent is dropped and
   * reported (`closed`), or, with the disk spool, left there for the next start.
   */
  timeoutMs?: number;
}

/** One event of a journal (the disk spool): its id there and the event. */
export interface JournalEntry<E> {
  id: number;
  event: E;
}

/** A batch a journal kept from an earlier process: resent first, with its own key. */
export interface RestoredBatch<E> {
  key: string;
  entries: JournalEntry<E>[];
}

/**
 * Where a queue writes what must outlive the process (the Node disk spool). Each call returns
 * once the record is written (a crash right after keeps it).
 */
export interface QueueJournal<E> {
  /** Records a pushed event (`json` is its serialization); answers its id, or undefined when the journal is full. */
  append(event: E, json: string): number | undefined;
  /** Records that these events form the batch `key`, about to be sent (after a crash: resent as is). */
  freeze(key: string, ids: readonly number[]): void;
  /** Records that these events are settled (stored, or dropped and reported): they need not survive. */
  settle(ids: readonly number[]): void;
  /** What an earlier process left: batches already sent once, then events never sent (in push order). */
  restore(): { batches: RestoredBatch<E>[]; events: JournalEntry<E>[] };
}

/** Observe's limit of events per POST /api/events. */
const MAX_REQUEST_EVENTS = 1000;
const DEFAULT_MAX_QUEUE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_RETRY_TIME_MS = 10 * 60 * 1000;
/** The default reporter writes at most one line per this long. */
const REPORT_WINDOW_MS = 10_000;
/** Distinct reasons a summary names; the rest are counted. */
const SUMMARY_REASONS = 3;
const MESSAGE_LIMIT = 200;

const EVENT_INDEX = /^events\.(\d+)(?:\.|$)/;

function truncate(text: string, limit = MESSAGE_LIMIT): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}

/**
 * The first few distinct problems of a validation error, each with how often it occurs:
 * `payload.callId: Required (×37); timestamp: Invalid date; +2 more`.
 */
export function summariseDetails(error: VigilValidationError): string {
  const counts = new Map<string, number>();
  for (const detail of error.details) {
    const problem = `${detail.path.replace(EVENT_INDEX, '')}${detail.path === '' ? '' : ': '}${detail.message}`;
    counts.set(problem, (counts.get(problem) ?? 0) + 1);
  }
  if (counts.size === 0) return truncate(error.message);
  const named = [...counts].slice(0, SUMMARY_REASONS).map(([problem, n]) => truncate(n > 1 ? `${problem} (×${n})` : problem, 120));
  return named.join('; ') + (counts.size > SUMMARY_REASONS ? `; +${counts.size - SUMMARY_REASONS} more` : '');
}

/** Indices of the batch's events a validation error names (`events.3.payload.callId` → 3). */
function refusedIndices(error: VigilValidationError, size: number): Set<number> {
  const indices = new Set<number>();
  for (const detail of error.details) {
    const match = EVENT_INDEX.exec(detail.path);
    if (match) indices.add(Number(match[1]));
  }
  return new Set([...indices].filter((i) => i < size));
}

/**
 * The default onError: one line per failure (how many events, why, the first distinct causes,
 * never more than a few hundred characters), and at most one line per `windowMs`: failures in
 * between are added up and written as one line when the window ends. A failure at exit is written
 * at once (there is no later).
 */
export function defaultErrorReporter(write: (line: string) => void = (line) => console.warn(line), windowMs = REPORT_WINDOW_MS): (error: VigilError) => void {
  let quietUntil = 0;
  let held: { failures: number; events: number; reasons: Map<string, number>; first: string } | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const writeHeld = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (!held) return;
    const reasons = [...held.reasons].map(([reason, events]) => `${reason} ${events}`).join(', ');
    write(`vigil: ${held.failures} more delivery failures since the last report, ${held.events} events not stored (${reasons}); first: ${held.first}`);
    held = undefined;
    quietUntil = Date.now() + windowMs;
  };
  return (error) => {
    const line = truncate(error.message, 2 * MESSAGE_LIMIT);
    const delivery = error instanceof VigilDeliveryError ? error : undefined;
    const now = Date.now();
    if (delivery?.reason === 'exit') {
      writeHeld();
      write(`vigil: ${line}`);
      return;
    }
    if (now >= quietUntil && !held) {
      write(`vigil: ${line}`);
      quietUntil = now + windowMs;
      return;
    }
    held ??= { failures: 0, events: 0, reasons: new Map(), first: line };
    held.failures += 1;
    const reason = delivery?.reason ?? error.name;
    held.events += delivery?.count ?? 0;
    held.reasons.set(reason, (held.reasons.get(reason) ?? 0) + (delivery?.count ?? 0));
    if (timer === undefined) {
      timer = setTimeout(writeHeld, Math.max(0, quietUntil - now));
      (timer as { unref?: () => void }).unref?.();
    }
  };
}

/** A delivery that failed, with the positions (in push order) of the events it carried. */
interface FailedDelivery {
  first: number;
  last: number;
  error: VigilDeliveryError;
}

/** A flush() waiting until every event pushed before it is settled. */
interface FlushWaiter {
  /** Events pushed before the flush: it resolves once that many are settled. */
  target: number;
  /** Events already handed to a request when the flush was called: their failures are not its own. */
  from: number;
  resolve: (failures: VigilDeliveryError[]) => void;
}

/** A queued event: its serialized size, and its id in the journal (-1 without one). */
interface Entry<E> {
  event: E;
  bytes: number;
  id: number;
}

/** A batch as frozen at its first send: the same events and key on every retry. */
interface Batch<E> {
  key: string;
  entries: Entry<E>[];
}

/** Sends one batch with its Idempotency-Key; `signal` aborts it (and its retries) when close() stops waiting. */
export type BatchSender<E> = (events: E[], idempotencyKey: string, signal: AbortSignal) => Promise<void>;

export interface QueueOptions<E> extends BatchingOptions {
  journal?: QueueJournal<E>;
}

export class EventQueue<E> {
  private queue: Entry<E>[] = [];
  private queuedBytes = 0;
  /** Batches an earlier process froze (from the journal): sent first, as they were. */
  private restored: Batch<E>[] = [];
  private restoredEvents = 0;
  private sending = false;
  /** A flush or the interval asked for what is waiting, however few. */
  private due = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private closing: Promise<CloseResult> | undefined;
  /** Aborts the request in flight and its retries: close() stopped waiting. */
  private readonly abandon = new AbortController();
  /** Events handed to a request, and settled (stored or given up), since the start; accepted = taken + waiting. */
  private taken = 0;
  private settled = 0;
  private stored = 0;
  private dropped = 0;
  private spooled = 0;
  private failed: FailedDelivery[] = [];
  private waiters: FlushWaiter[] = [];
  /**
   * Whether a batch waiting for its interval keeps the process alive until it is sent (the safe
   * default). Node's exit hook (@vigil/sdk/node) clears it and sends on `beforeExit` instead, so a
   * finished script exits at once.
   */
  keepsProcessAlive = true;
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  private readonly maxQueueSize: number;
  private readonly maxQueueBytes: number;
  private readonly journal: QueueJournal<E> | undefined;
  private readonly report: (error: VigilError) => void;

  constructor(
    private readonly send: BatchSender<E>,
    options: QueueOptions<E> = {},
  ) {
    this.batchSize = Math.min(MAX_REQUEST_EVENTS, Math.max(1, Math.floor(options.batchSize ?? 100)));
    this.flushIntervalMs = Math.max(0, options.flushIntervalMs ?? 1000);
    this.maxQueueSize = Math.max(this.batchSize, options.maxQueueSize ?? 100_000);
    this.maxQueueBytes = Math.max(1, options.maxQueueBytes ?? DEFAULT_MAX_QUEUE_BYTES);
    this.journal = options.journal;
    const onError = options.onError ?? defaultErrorReporter();
    this.report = (error) => {
      try {
        onError(error);
      } catch {
        // A throwing handler must not break delivery.
      }
    };
    if (this.journal) this.restore(this.journal);
  }

  /** Events waiting and not yet handed to a request (an earlier process's batches included). */
  get size(): number {
    return this.queue.length + this.restoredEvents;
  }

  push(event: E): void {
    if (this.closed) throw new VigilClosedError('The client is closed: no more events can be sent');
    let json: string;
    try {
      json = JSON.stringify(event);
    } catch (error) {
      this.drop(new VigilDeliveryError(`The event is not JSON (${(error as Error).message}): 1 event dropped`, [event], 'unserializable', error));
      return;
    }
    const bytes = json.length;
    if (this.queue.length >= this.maxQueueSize || this.queuedBytes + bytes > this.maxQueueBytes) {
      const bound = this.queue.length >= this.maxQueueSize ? `${this.maxQueueSize} events` : `${this.maxQueueBytes} bytes`;
      this.drop(new VigilDeliveryError(`Event queue full (${bound} waiting): 1 event dropped`, [event], 'queue_full'));
      return;
    }
    const id = this.journal ? this.journal.append(event, json) : -1;
    if (id === undefined) {
      this.drop(new VigilDeliveryError('Disk spool full (maxSpoolBytes): 1 event dropped', [event], 'spool_full'));
      return;
    }
    this.queue.push({ event, bytes, id });
    this.queuedBytes += bytes;
    if (this.queue.length >= this.batchSize) {
      void this.pump();
    } else {
      this.armTimer();
    }
  }

  /**
   * Sends everything queued so far and waits until it, and the request already in flight, is
   * stored or given up. Rejects with a VigilDeliveryError when events queued before this call
   * and sent after it failed (the failure is also reported to onError).
   */
  async flush(): Promise<void> {
    const failures = await new Promise<VigilDeliveryError[]>((resolve) => {
      this.waiters.push({ target: this.taken + this.size, from: this.taken, resolve });
      this.due = true;
      void this.pump();
      this.settle();
    });
    if (failures.length === 1) throw failures[0]!;
    if (failures.length > 1) {
      throw new VigilDeliveryError(
        `${failures.length} batches were not stored: ${truncate(failures.map((f) => f.message).join('; '), 2 * MESSAGE_LIMIT)}`,
        failures.flatMap((f) => [...f.events]),
        failures.every((f) => f.reason === failures[0]!.reason) ? failures[0]!.reason : 'several',
        failures,
      );
    }
  }

  /**
   * Refuses further events at once, then sends what is queued and waits for it (at most
   * `timeoutMs`). Never rejects: losses were reported to onError; it resolves with the counts.
   */
  close(options: CloseOptions = {}): Promise<CloseResult> {
    this.closing ??= this.shutdown(options.timeoutMs);
    return this.closing;
  }

  private async shutdown(timeoutMs: number | undefined): Promise<CloseResult> {
    this.closed = true;
    const flushed = this.flush().then(
      () => true,
      () => true, // reported to onError already
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done =
      timeoutMs === undefined
        ? await flushed
        : await Promise.race([flushed, new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, timeoutMs))))]);
    clearTimeout(timer);
    if (!done) {
      this.abandon.abort(new VigilClosedError(`close() stopped waiting after ${timeoutMs} ms`));
      this.discard(`close() stopped waiting after ${timeoutMs} ms`, 'closed');
      await flushed;
    }
    return { stored: this.stored, dropped: this.dropped, spooled: this.spooled };
  }

  /**
   * The process is exiting: what is still queued is dropped and reported (`why`, `reason`) — or,
   * with a journal, left there for the next start.
   */
  discard(why: string, reason: DeliveryFailureReason): void {
    const lost = [...this.restored.flatMap((batch) => batch.entries), ...this.queue];
    if (lost.length === 0) return;
    this.restored = [];
    this.restoredEvents = 0;
    this.queue = [];
    this.queuedBytes = 0;
    this.taken += lost.length;
    this.settled += lost.length;
    if (this.journal) this.spooled += lost.length;
    else
      this.drop(
        new VigilDeliveryError(
          `${lost.length} events were lost: ${why}`,
          lost.map((entry) => entry.event),
          reason,
        ),
      );
    this.settle();
  }

  private drop(error: VigilDeliveryError): void {
    this.dropped += error.count;
    this.report(error);
  }

  private restore(journal: QueueJournal<E>): void {
    const { batches, events } = journal.restore();
    const entry = ({ id, event }: JournalEntry<E>): Entry<E> => ({ id, event, bytes: JSON.stringify(event).length });
    this.restored = batches.map((batch) => ({ key: batch.key, entries: batch.entries.map(entry) }));
    this.restoredEvents = batches.reduce((n, batch) => n + batch.entries.length, 0);
    this.queue = events.map(entry);
    this.queuedBytes = this.queue.reduce((n, queued) => n + queued.bytes, 0);
    if (this.size > 0) {
      this.due = true;
      void this.pump();
    }
  }

  /** Takes up to 1000 waiting events as a batch with a new key, recorded in the journal before it is sent. */
  private freeze(entries: Entry<E>[]): Batch<E> {
    const batch = { key: newId(), entries };
    this.journal?.freeze(
      batch.key,
      entries.map((entry) => entry.id),
    );
    return batch;
  }

  /** The one sender: requests go one at a time, each with everything waiting (up to 1000). */
  private async pump(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.restored.length > 0 || this.queue.length >= this.batchSize || (this.due && this.queue.length > 0)) {
        if (this.timer !== undefined) {
          clearTimeout(this.timer);
          this.timer = undefined;
        }
        let batch = this.restored.shift();
        if (batch) this.restoredEvents -= batch.entries.length;
        else {
          const entries = this.queue.splice(0, MAX_REQUEST_EVENTS);
          this.queuedBytes -= entries.reduce((n, entry) => n + entry.bytes, 0);
          batch = this.freeze(entries);
        }
        const first = this.taken;
        this.taken += batch.entries.length;
        const failure = await this.deliver(batch);
        if (failure) this.failed.push({ first, last: this.taken - 1, error: failure });
        this.settled += batch.entries.length;
        this.settle();
      }
      this.due = false;
      // Events left below batchSize wait for the interval.
      if (this.queue.length > 0) this.armTimer();
    } finally {
      this.sending = false;
    }
  }

  /** Sends what waits `flushIntervalMs` from now, unless a send is already timed. */
  private armTimer(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.due = true;
      void this.pump();
    }, this.flushIntervalMs);
    if (!this.keepsProcessAlive) (this.timer as { unref?: () => void }).unref?.();
  }

  /** Resolves the flushes whose events are all settled, with the failures of what they sent. */
  private settle(): void {
    const waiting: FlushWaiter[] = [];
    for (const waiter of this.waiters) {
      if (this.settled < waiter.target) {
        waiting.push(waiter);
        continue;
      }
      waiter.resolve(this.failed.filter((f) => f.last >= waiter.from && f.first < waiter.target).map((f) => f.error));
    }
    this.waiters = waiting;
    if (waiting.length === 0) this.failed = [];
  }

  private settleInJournal(entries: Entry<E>[]): void {
    this.journal?.settle(entries.map((entry) => entry.id));
  }

  /**
   * Sends one batch (the transport retries it within maxRetryTimeMs). Events the server names as
   * invalid are dropped and reported, and the rest sent once more as a new batch (a new key: it
   * is a different body). Answers the failure reported, if any.
   */
  private async deliver(batch: Batch<E>): Promise<VigilDeliveryError | undefined> {
    let current = batch;
    let refused: VigilDeliveryError | undefined;
    for (let round = 0; ; round++) {
      const events = current.entries.map((entry) => entry.event);
      try {
        await this.send(events, current.key, this.abandon.signal);
        this.stored += events.length;
        this.settleInJournal(current.entries);
        return refused;
      } catch (error) {
        if (this.abandon.signal.aborted) {
          // close() stopped waiting: the spool keeps the batch (resent with its key at the next start); else it is lost.
          if (this.journal) {
            this.spooled += events.length;
            return undefined;
          }
          const failure = new VigilDeliveryError(`${events.length} events were not stored: close() stopped waiting for them`, events, 'closed', error);
          this.drop(failure);
          return failure;
        }
        if (round === 0 && error instanceof VigilValidationError) {
          const bad = refusedIndices(error, events.length);
          if (bad.size > 0 && bad.size < events.length) {
            const badEntries = current.entries.filter((_, i) => bad.has(i));
            refused = new VigilDeliveryError(
              `observe refused ${bad.size} of ${events.length} events: ${summariseDetails(error)}`,
              badEntries.map((entry) => entry.event),
              'refused',
              error,
            );
            this.settleInJournal(badEntries);
            this.drop(refused);
            current = this.freeze(current.entries.filter((_, i) => !bad.has(i)));
            continue;
          }
        }
        // A final answer (a 4xx not worth repeating) refuses the batch; anything else ran out of retry time.
        const reason: DeliveryFailureReason = error instanceof VigilApiError && error.status < 500 && !retryableAnswer(error) ? 'refused' : 'retries_exhausted';
        const cause = error instanceof VigilValidationError ? summariseDetails(error) : truncate((error as Error).message);
        const failure = new VigilDeliveryError(`${events.length} events were not stored (${reason}): ${cause}`, events, reason, error);
        this.settleInJournal(current.entries);
        this.drop(failure);
        return failure;
      }
    }
  }
}
