/**
 * Event batching: events are queued and sent in batches, one batch at a time and in order (so
 * each session's chain follows the order the agent emitted), when `batchSize` events are waiting
 * or `flushIntervalMs` after the first event of a batch was queued, and on flush()/close().
 * Sending on process exit is Node's business: `@vigil/sdk/node` adds it.
 */
import { VigilClosedError, VigilDeliveryError, VigilValidationError, type VigilError } from './errors.ts';

export interface BatchingOptions {
  /** Events per request: a full batch is sent at once (default 100, 1 to 1000). */
  batchSize?: number;
  /** Longest time an event waits in the queue (default 1000 ms). */
  flushIntervalMs?: number;
  /** Events held at most while the server is unreachable; further events are dropped and reported (default 10,000). */
  maxQueueSize?: number;
  /**
   * Receives every delivery failure exactly once, whatever triggered the send: a batch that
   * could not be stored after the retries, events the server refused, events dropped because the
   * queue was full or lost at exit. Default: console.warn.
   */
  onError?: (error: VigilError) => void;
}

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

export class EventQueue<E> {
  private queue: E[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
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
    this.batchSize = Math.min(1000, Math.max(1, Math.floor(options.batchSize ?? 100)));
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
      void this.dispatch(true);
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.dispatch(false);
      }, this.flushIntervalMs);
      if (!this.keepsProcessAlive) (this.timer as { unref?: () => void }).unref?.();
    }
  }

  /**
   * Sends everything queued so far and waits until it, and every batch already in flight, is
   * stored or given up. Rejects with a VigilDeliveryError when a batch this call sent failed
   * (the failure is also reported to onError).
   */
  async flush(): Promise<void> {
    const failures = await this.dispatch(false);
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
    if (this.closed) return this.chain.then(() => undefined);
    try {
      await this.flush();
    } finally {
      this.closed = true;
    }
  }

  /** Drops what is still queued (reported as lost, with `reason`): the process is exiting. */
  discard(reason: string): void {
    if (this.queue.length > 0) this.report(new VigilDeliveryError(`${this.queue.length} events were lost: ${reason}`, this.queue.splice(0)));
  }

  /** Cuts the queue into batches (only full ones when `fullOnly`) and chains their delivery after the batches in flight. */
  private dispatch(fullOnly: boolean): Promise<VigilDeliveryError[]> {
    const batches: E[][] = [];
    while (this.queue.length >= this.batchSize || (!fullOnly && this.queue.length > 0)) batches.push(this.queue.splice(0, this.batchSize));
    if (this.queue.length === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const run = this.chain.then(async () => {
      const failures: VigilDeliveryError[] = [];
      for (const batch of batches) {
        const failure = await this.deliver(batch);
        if (failure) failures.push(failure);
      }
      return failures;
    });
    this.chain = run.catch(() => undefined);
    return run;
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
