// Recall: embeddings of events and sessions (queued in the ingest transaction, drained after commit
// and by a periodic job), the in-memory vector index, and semantic search.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { CachingStoredEmbedder, embedsLocally, encodedHere } from './embedder.ts';
import { enqueueEmbeddings, releaseStaleClaims } from './queue.ts';
import { registerRecallRoutes } from './routes.ts';
import { ThreadedLocalEmbedder } from './threaded-embedder.ts';
import { EMBEDDINGS_INTERVAL_MS, EmbeddingWorker } from './worker.ts';

export { createEmbedder, type Embedder, similarity } from './embedder.ts';
export { contenders, embedQuery, MAX_QUERY_CHARS, RESCORED_EXTRA, rescore, score, TopK } from './search.ts';
export { describeEvent, truncate } from './text.ts';
export { VectorIndex } from './vector-index.ts';
export { forgetEmbeddings } from './forget.ts';
export type { RecallTables } from './tables.ts';
export { recallMigrations } from './migrations.ts';

/** Resolves to the embedding job. */
export function recallFeature(options: { drainAfterCommit: boolean }): ObserveFeature<PeriodicJob> {
  return defineFeature('recall', async ({ app, context, job, onClose }) => {
    // Claims left by a process that stopped mid-drain are free again.
    await releaseStaleClaims(context.database);
    registerRecallRoutes(app, context);
    // The local embedder hashes and encodes on a thread of its own; a remote backend is awaited over the network anyway.
    const thread = embedsLocally(context.embedder) ? new ThreadedLocalEmbedder(context.embedder.dimensions) : null;
    const embedder = thread ? new CachingStoredEmbedder(thread) : encodedHere(context.embedder);
    const worker = new EmbeddingWorker(context, embedder, app.log, options.drainAfterCommit, context.config.retentionIntervalMs);
    // Embedding work is durable with the events; the worker drains it after commit. Events stored
    // sealed are not embedded: the stored texts and vectors would keep their plaintext readable in
    // a copy past an erasure (docs/guide/erasure.md#crypto-shredding).
    if (!context.sealer.enabled) {
      context.events.inTransaction((batch) =>
        enqueueEmbeddings(
          batch.trx,
          batch.dialect,
          batch.events,
          batch.sessions.map((session) => session.sessionId),
          Date.now(),
        ),
      );
    }
    context.events.afterCommit(() => worker.kick());
    const embeddings = job({ name: 'observe.embeddings', intervalMs: EMBEDDINGS_INTERVAL_MS, run: (now) => worker.runJob(now) });
    onClose(async () => {
      await worker.stop();
      await thread?.close();
    });
    return embeddings;
  });
}
