import { ThreadClient, ThreadRequestError } from '@vigil/platform';
import { EmbeddingBackendError, LocalEmbedder, type StoredVector, type StoredVectorEmbedder } from './embedder.ts';

/** A batch's encoded vectors as the thread sends them: one buffer (two transfers, not one per vector) and where each vector ends in it. */
export interface EncodedBatch {
  bytes: Uint8Array<ArrayBuffer>;
  ends: Uint32Array<ArrayBuffer>;
}

/**
 * The local embedder run on a worker thread (embed-thread.ts), so that hashing texts (CPU only,
 * ~10 % of ingest's CPU when it ran on the main thread) and encoding their vectors for storage
 * (about 5 µs a vector) compete with request handling for no event-loop time. Same model as
 * LocalEmbedder, and its vectors as encodeVector stores them. The thread starts on first use and ends
 * after a minute without work; at most two requests are with it (the embedding drain sends one
 * batch at a time), later callers queue. If the thread dies, its requests fail with a retryable
 * EmbeddingBackendError (the embedding queue rows stay and are retried with backoff: they are the
 * durable state) and the next call starts a new thread. close() ends it.
 */
export class ThreadedLocalEmbedder implements StoredVectorEmbedder {
  readonly model: string;
  readonly dimensions: number;
  private readonly thread: ThreadClient<string[], EncodedBatch>;

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

  async embedStored(texts: string[]): Promise<StoredVector[]> {
    if (texts.length === 0) return [];
    try {
      const { bytes, ends } = await this.thread.ask(texts);
      // Each vector copied out of the batch's buffer, so that one kept (a cache) does not keep the batch.
      return Array.from(ends, (end, i) => ({ dims: this.dimensions, vector: Buffer.from(bytes.subarray(i === 0 ? 0 : ends[i - 1], end)) }));
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
