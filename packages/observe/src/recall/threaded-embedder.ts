import { ThreadClient, ThreadRequestError } from '@vigil/platform';
import { EmbeddingBackendError, LocalEmbedder, type Embedder } from './embedder.ts';

/**
 * The local embedder run on a worker thread (embed-thread.ts), so that hashing texts (CPU only,
 * ~10 % of ingest's CPU when it ran on the main thread) competes with request handling for no
 * event-loop time. Same model and vectors as LocalEmbedder. The thread starts on first use and ends
 * after a minute without work; at most two requests are with it (the embedding drain sends one
 * batch at a time), later callers queue. If the thread dies, its requests fail with a retryable
 * EmbeddingBackendError (the embedding queue rows stay and are retried with backoff: they are the
 * durable state) and the next call starts a new thread. close() ends it.
 */
export class ThreadedLocalEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  private readonly thread: ThreadClient<string[], Float32Array[]>;

  constructor(dimensions = 512) {
    const local = new LocalEmbedder(dimensions);
    this.model = local.model;
    this.dimensions = local.dimensions;
    this.thread = new ThreadClient(new URL('./embed-thread.ts', import.meta.url), {
      name: 'embedding',
      workerData: { dimensions: this.dimensions },
      idleMs: 60_000,
      maxInFlight: 2,
    });
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    try {
      return await this.thread.ask(texts);
    } catch (error) {
      const message = (error as Error).message;
      throw new EmbeddingBackendError(error instanceof ThreadRequestError ? `local embedder failed: ${message}` : message);
    }
  }

  /** Ends the thread; requests still with it fail (retryable). */
  close(): Promise<void> {
    return this.thread.close();
  }
}
