/**
 * kill -9 of a real `vigil observe` process (SQLite, the embedded default) after its ingest was
 * acknowledged but before the embedding worker stored the vectors (the embeddings API holds its
 * answer until the kill), then a restart on the same file: every acknowledged event becomes
 * searchable through GET /api/recall (crash-scenarios.ts; `npm run chaos` loops it, also with the
 * built-in embedder killed right after a 201).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { embeddingCrash } from './crash-scenarios.ts';

test('observe killed before its embedding worker stored the vectors: the events become searchable after the restart', async () => {
  const result = await embeddingCrash({ variant: 'held-backend' });
  assert.deepEqual(result.problems, [], JSON.stringify(result.stats));
  assert.ok(Number(result.stats.queuedAfterRestart) > 0, 'the queue still held the work at the restart');
});
