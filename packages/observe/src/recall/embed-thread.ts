// The local embedder's thread (see threaded-embedder.ts): texts in, vectors out in their stored
// encoding, nothing else.
import { encodeVector } from '@vigil/platform/int8-vectors';
import { serveThreadRequests } from '@vigil/platform/threads';
import { workerData } from 'node:worker_threads';
import { LocalEmbedder } from './local-embedder.ts';
import type { EncodedBatch } from './threaded-embedder.ts';

const embedder = new LocalEmbedder((workerData as { dimensions: number }).dimensions);

serveThreadRequests(
  (texts: string[]): EncodedBatch => {
    const encoded = texts.map((text) => encodeVector(embedder.embedOne(text)));
    const ends = new Uint32Array(encoded.length);
    let length = 0;
    encoded.forEach((vector, i) => (ends[i] = length += vector.length));
    const bytes = new Uint8Array(length);
    encoded.forEach((vector, i) => bytes.set(vector, ends[i]! - vector.length));
    return { bytes, ends };
  },
  ({ bytes, ends }) => [bytes.buffer, ends.buffer],
);
