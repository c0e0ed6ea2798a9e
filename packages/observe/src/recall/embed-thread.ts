// The local embedder's thread (see threaded-embedder.ts): texts in, vectors out, nothing else.
import { serveThreadRequests } from '@vigil/platform/threads';
import { workerData } from 'node:worker_threads';
import { LocalEmbedder } from './local-embedder.ts';

const embedder = new LocalEmbedder((workerData as { dimensions: number }).dimensions);

serveThreadRequests(
  (texts: string[]) => texts.map((text) => embedder.embedOne(text)),
  (vectors) => vectors.map((vector) => vector.buffer as ArrayBuffer),
);
