import { deliveryQueueProbe, tablesOf } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';

/** Observe's own series on GET /metrics: ingest after commit, and its durable queues measured per scrape. */
export function registerObserveMetrics(ctx: ObserveContext): void {
  const { metrics, database } = ctx;
  const events = metrics.counter('vigil_ingest_events_total', 'Events stored (committed), every ingest route');
  const batches = metrics.counter('vigil_ingest_batches_total', 'Ingest batches committed');
  ctx.events.afterCommit((appended) => {
    events.inc(appended.length);
    batches.inc();
  });
  const deliveries = tablesOf(database.db) as never;
  metrics.queue(deliveryQueueProbe('alert_deliveries', deliveries, 'alert_deliveries'));
  metrics.queue(deliveryQueueProbe('guardrail_deliveries', deliveries, 'guardrail_deliveries'));
  metrics.queue({
    name: 'embeddings',
    async measure() {
      const row = await database.db
        .selectFrom('embedding_queue')
        .select((eb) => [eb.fn.countAll<number>().as('depth'), eb.fn.min('next_attempt_at').as('oldest')])
        .executeTakeFirst();
      return { depth: Number(row?.depth ?? 0), oldestDueAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
    },
  });
}
