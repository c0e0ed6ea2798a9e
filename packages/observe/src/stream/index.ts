// GET /api/stream: the commit-ordered stream log (written last in the ingest transaction) and StreamHub.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { StreamHub } from './hub.ts';
import { appendToStreamLog } from './log.ts';
import { registerStreamRoutes } from './routes.ts';

export type { StreamHub } from './hub.ts';
export { pruneStreamLog } from './log.ts';
export type { StreamTables } from './tables.ts';

/** Resolves to the hub of the open streams. */
export const streamFeature: ObserveFeature<StreamHub> = defineFeature('stream', ({ app, context }) => {
  const hub = new StreamHub(context, app.log);
  // From here to the commit, the stream head's row lock orders the ingest transaction's commit.
  context.events.inTransaction(
    async (batch) => {
      batch.logPositions = await appendToStreamLog(batch.trx, batch.dialect, batch.sessions, batch.receivedAt);
    },
    { ordersCommits: true },
  );
  context.events.afterCommit(() => hub.committed());
  registerStreamRoutes(app, context, hub);
  // Open streams end before the server stops listening (they would keep it open), then the LISTEN connection closes.
  app.addHook('preClose', () => hub.close());
  return hub;
});
