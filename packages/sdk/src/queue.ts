/**
 * Event batching: events are queued and sent by one sender, one request at a time and in order
 * (so each session's chain follows the order the agent emitted): at once when `batchSize` events
 * are waiting, else `flushIntervalMs` after the first, and on flush()/close(). A request carries
 * everything waiting, up to 1000 events (observe's batch limit): while one is in flight the next
 * fills, so a slow server gets fewer, larger batches instead of a growing backlog of small ones.
 * Sending on process exit is Node's business: `@vigil/sdk/node` adds it.
 */
import { VigilClosedError, VigilDeliveryError, VigilValidationError, type VigilError } from './errors.ts';

export interface BatchingOptions {
  /** Events waiting that are sent at once (default 100, 1 to 1000); a request carries up to 1000. */
  batchSize?: number;
  /** Longest time an event waits in the queue (default 1000 ms). */
  flushIntervalMs?: number;
  /**
   * Events waiting at most (beside the up to 1000 of the request in flight) while the server is
   * slow or unreachable; further events are dropped and reported (default 10,000).
   */
  maxQueueSize?: number;
  /**
   * Receives every delivery failure exactly once, whatever triggered the send: a batch that
   * could not be stored after the retries, events the server refused, events dropped because the
   * queue was full or lost at exit. Default: console.warn.
   */
  onError?: (error: VigilError) => void;
}

/** Observe's limit of events per POST /api/events. */
const MAX_REQUEST_EVENTS = 1000;

const EVENT_INDEX = /^events\.(\d+)(?:\.|$)/;

/** Indices of the batch's events a validation error names (`events.3.payload.callId` → 3). */
function refusedIndices(error: VigilValidationError, size: number): Set<number> {
  const indices = new Set<number>();
  for (const detail of error.details) {
    const match = EVENT_INDEX.exec(detail.path);
    if (match) indices.add(Number(match[1]));
  }
  return new Set([...indices].filter((i) => i < size));
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

export class EventQueue<E> {
  private queue: E[] = [];
  private sending = false;
  /** A flush or the interval asked for what is waiting, however few. */
  private due = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /** Events handed to a request, and settled (stored or given up), since the start; accepted = taken + queued. */
  private taken = 0;
  private settled = 0;
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
  private readonly report: (error: VigilError) => void;

  constructor(
    private readonly send: (events: E[]) => Promise<void>,
    options: BatchingOptions = {},
  ) {
    this.batchSize = Math.min(MAX_REQUEST_EVENTS, Math.max(1, Math.floor(options.batchSize ?? 100)));
    this.flushIntervalMs = Math.max(0, options.flushIntervalMs ?? 1000);
    this.maxQueueSize = Math.max(this.batchSize, options.maxQueueSize ?? 10_000);
    this.report = (error) => {
      try {
        (options.onError ?? ((e: VigilError) => console.warn(`vigil: ${e.message}`)))(error);
      } catch {
        // A throwing handler must not break delivery.
      }
    };
  }

  /** Events queued and not yet handed to a request. */
  get size(): number {
    return this.queue.length;
  }

  push(event: E): void {
    if (this.closed) throw new VigilClosedError('The client is closed: no more events can be sent');
    if (this.queue.length >= this.maxQueueSize) {
      this.report(new VigilDeliveryError(`Event queue full (${this.maxQueueSize} events): event dropped`, [event]));
      return;
    }
    this.queue.push(event);
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
      this.waiters.push({ target: this.taken + this.queue.length, from: this.taken, resolve });
      this.due = true;
      void this.pump();
      this.settle();
    });
    if (failures.length === 1) throw failures[0]!;
    if (failures.length > 1) {
      throw new VigilDeliveryError(
        `${failures.length} batches were not stored: ${failures.map((f) => f.message).join('; ')}`,
        failures.flatMap((f) => [...f.events]),
        failures,
      );
    }
  }

  /** Flushes, then refuses further events. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      this.closed = true;
    }
  }

  /** Drops what is still queued (reported as lost, with `reason`): the process is exiting. */
  discard(reason: string): void {
    if (this.queue.length === 0) return;
    const lost = this.queue.splice(0);
    this.taken += lost.length;
    this.settled += lost.length;
    this.report(new VigilDeliveryError(`${lost.length} events were lost: ${reason}`, lost));
    this.settle();
  }

  /** The one sender: requests go one at a time, each with everything waiting (up to 1000). */
  private async pump(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length >= this.batchSize || (this.due && this.queue.length > 0)) {
        if (this.timer !== undefined) {
          clearTimeout(this.timer);
          this.timer = undefined;
        }
        const batch = this.queue.splice(0, MAX_REQUEST_EVENTS);
        const first = this.taken;
        this.taken += batch.length;
        const failure = await this.deliver(batch);
        if (failure) this.failed.push({ first, last: this.taken - 1, error: failure });
        this.settled += batch.length;
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

  /** Sends one batch; events the server names as invalid are dropped (and reported) and the rest sent again once. */
  private async deliver(batch: E[]): Promise<VigilDeliveryError | undefined> {
    let events = batch;
    let refused: VigilDeliveryError | undefined;
    for (let round = 0; ; round++) {
      try {
        await this.send(events);
        return refused;
      } catch (error) {
        if (round === 0 && error instanceof VigilValidationError) {
          const bad = refusedIndices(error, events.length);
          if (bad.size > 0 && bad.size < events.length) {
            refused = new VigilDeliveryError(
              `observe refused ${bad.size} of ${events.length} events: ${error.message}`,
              events.filter((_, i) => bad.has(i)),
              error,
            );
            this.report(refused);
            events = events.filter((_, i) => !bad.has(i));
            continue;
          }
        }
        const failure = new VigilDeliveryError(`${events.length} events were not stored: ${(error as Error).message}`, events, error);
        this.report(failure);
        return failure;
      }
    }
  }
}
