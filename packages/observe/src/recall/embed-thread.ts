// The local embedder's thread (see threaded-embedder.ts): texts in, vectors out, nothing else.
import { parentPort, workerData } from 'node:worker_threads';
import { LocalEmbedder } from './local-embedder.ts';

export interface EmbedRequest {
  id: number;
  texts: string[];
}

export type EmbedReply = { id: number; vectors: Float32Array[] } | { id: number; error: string };

const embedder = new LocalEmbedder((workerData as { dimensions: number }).dimensions);

parentPort!.on('message', ({ id, texts }: EmbedRequest) => {
  try {
    const vectors = texts.map((text) => embedder.embedOne(text));
    parentPort!.postMessage(
      { id, vectors } satisfies EmbedReply,
      vectors.map((v) => v.buffer as ArrayBuffer),
    );
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies EmbedReply);
  }
});
