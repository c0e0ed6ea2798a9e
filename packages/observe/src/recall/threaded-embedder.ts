import type { Worker } from 'node:worker_threads';
import { startThread } from '@vigil/platform';
import type { EmbedReply, EmbedRequest } from './embed-thread.ts';
import { EmbeddingBackendError, LocalEmbedder, type Embedder } from './embedder.ts';

/** A thread left without work this long is ended (its memory returned); the next batch starts another. */
const IDLE_MS = 60_000;
/** Requests handed to the thread at once; further callers wait their turn (the embedding drain sends one batch at a time). */
const MAX_IN_FLIGHT = 2;

/**
 * The local embedder run on a worker thread, so that hashing texts (CPU only, ~10 % of ingest's
 * CPU when it ran on the main thread) competes with request handling for no event-loop time. Same
 * model and vectors as LocalEmbedder. The thread starts on first use and ends after IDLE_MS
 * without work; at most MAX_IN_FLIGHT requests are with it, later callers queue. If the thread dies, its requests fail with a
 * retryable EmbeddingBackendError (the embedding queue rows stay and are retried with backoff: they
 * are the durable state) and the next call starts a new thread. close() ends it.
 */
export class ThreadedLocalEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  private thread: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(vectors: Float32Array[]): void; reject(error: Error): void }>();
  private readonly waiting: (() => void)[] = [];
  private closed = false;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(dimensions = 512) {
    const local = new LocalEmbedder(dimensions);
    this.model = local.model;
    this.dimensions = local.dimensions;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    while (this.pending.size >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.closed) throw new EmbeddingBackendError('the embedding thread is closed');
    const thread = this.running();
    const id = this.nextId++;
    try {
      return await new Promise<Float32Array[]>((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        thread.postMessage({ id, texts } satisfies EmbedRequest);
      });
    } finally {
      this.pending.delete(id);
      this.waiting.shift()?.();
      if (this.pending.size === 0 && this.waiting.length === 0) this.idleSoon();
    }
  }

  private idleSoon(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      const thread = this.thread;
      if (!thread || this.pending.size > 0) return;
      this.thread = null;
      void thread.terminate();
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  /** Ends the thread; requests still with it fail (retryable). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const thread = this.thread;
    this.thread = null;
    this.failAll('the embedding thread was closed');
    for (const resolve of this.waiting.splice(0)) resolve();
    if (thread) await thread.terminate();
  }

  private running(): Worker {
    if (this.thread) return this.thread;
    const thread = startThread(new URL('./embed-thread.ts', import.meta.url), { workerData: { dimensions: this.dimensions } });
    // An idle thread must not keep the process alive; close() ends it at shutdown.
    thread.unref();
    thread.on('message', (reply: EmbedReply) => {
      const request = this.pending.get(reply.id);
      if (!request) return;
      if ('error' in reply) request.reject(new EmbeddingBackendError(`local embedder failed: ${reply.error}`));
      else request.resolve(reply.vectors);
    });
    const lost = (reason: string): void => {
      if (this.thread !== thread) return;
      this.thread = null;
      this.failAll(reason);
    };
    thread.on('error', (error) => lost(`the embedding thread failed: ${error.message}`));
    thread.on('exit', (code) => lost(`the embedding thread exited with code ${code}`));
    this.thread = thread;
    return thread;
  }

  private failAll(reason: string): void {
    for (const request of this.pending.values()) request.reject(new EmbeddingBackendError(reason));
    this.pending.clear();
  }
}
