// The event store and its one write path (ingest.ts). Every other feature builds on it; it uses none.
//
// The write path's other half lives with the features that keep it, registered from their plugins:
// - before anything of a batch is prepared or hashed (EventAppender.beforeHash): redaction
// - in the ingest transaction (EventAppender.inTransaction), after events and sessions, in this
//   order: recall (embedding queue), audit-log (Merkle leaves, under the audit_log_head row lock),
//   stream (stream log, `ordersCommits`: its head lock orders commits); then the rows many batches
//   share (`sharedRows`): ingest's agents rows, then the derived tables that have an `apply`, in
//   the order the service registers them (app.ts): store totals (derived.ts), analytics (hourly
//   rollups, latency sketches)
// - after commit (EventAppender.afterCommit), never awaited by the request:
//   guardrails (evaluation), recall (embedding drain), audit-log (a checkpoint every N events), stream (wakes open streams)
// - one batch's own write, first in its transaction (AppendOptions.inTransaction): otel (the
//   otel_spans rows that make a resent span a no-op); or once its events are chained
//   (AppendOptions.afterAppend): ingest's Idempotency-Key row with the answer (idempotency.ts)
import { DAY_MS, defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { deleteExpiredKeys, IDEMPOTENCY_SWEEP_INTERVAL_MS } from './idempotency.ts';
import { createPartitionsAhead, eventsPartitioned, PARTITION_WEEK_MS, PARTITION_WEEKS_BEHIND } from './partitions.ts';
import { registerEventRoutes } from './routes.ts';

export {
  type ChainBreak,
  type ChainFields,
  chainHashOfCanonical,
  type ChainHead,
  type ChainVerdict,
  ChainVerifier,
  EMPTY_HEAD,
  forgetMatchedLinks,
  type StoredLink,
} from './chain.ts';
export { erasureCovers } from './erasure-covers.ts';
export { erasureLeafBody, erasureMarker, markedErasure } from './erasure-leaf.ts';
export { COMPLEXITY_TIERS, type ComplexityTier, deriveColumns, type DerivedColumns, EVENT_DERIVED_COLUMNS, isErrorEvent } from './derive.ts';
export {
  type AppendedEvent,
  type CommittedBatch,
  type CommittingBatch,
  EventAppender,
  type LogPositions,
  type SessionAppend,
  type SessionChange,
  type SessionSpan,
} from './ingest.ts';
export {
  clientAgentId,
  commaList,
  type Event,
  eventSchema,
  type EventType,
  identifier,
  type IncomingEvent,
  incomingEventSchema,
  INGEST_EVENT_TYPES,
  type IngestEventType,
  listEventsQuerySchema,
  payloadSchemas,
  SERVER_EVENT_TYPES,
  SEVERITIES,
} from './schemas.ts';
export { addUsdSql, nanosSql, sumNanosSql } from './money.ts';
export { SESSION_STATUSES, type SessionStatus } from './session-state.ts';
export {
  CHAIN_COLUMNS,
  chainTextOf,
  eventJson,
  forEachSessionEventPage,
  leafOfRow,
  linksJson,
  type LoggedChainRow,
  sessionEventsQuery,
  sessionLoggedRowsQuery,
  storedChainText,
  storedChainTextMatches,
  toLink,
} from './store.ts';
export { agentScope, SYSTEM_AGENT_ID } from './system-agent.ts';
export { type EventWriter, firstWriterMismatch, keyWriter, SERVER_WRITER, writerLeafBody } from './writer.ts';
export { compactWriterLeaves, storedWriterLeaf, writerLeafText } from './writer-leaf-store.ts';
export { compactKeyWriters, storedWriter, writerOfStored } from './stored-writer.ts';
export { eventsMigrations } from './migrations.ts';
export { eventPartitions, eventsPartitioned } from './partitions.ts';
export type { AgentRow, EventRow, EventsTables, SessionRow } from './tables.ts';
export {
  type EventDerivedRow,
  EVENTS_DERIVED_TABLES,
  SESSION_DERIVED_FIELDS,
  type SessionDerivedFields,
  type SessionDerivedRow,
  type StoredEventDerivedRow,
  type StoredSessionDerivedRow,
} from './derived.ts';
export {
  type AuditedTable,
  type DerivedTable,
  isAudited,
  KeyedRows,
  readDerivedPage,
  type Recomputation,
  type RecomputedEvent,
  type RecomputedRows,
  type UnwalkedEvent,
} from './derived-tables.ts';

/** How often the partition job makes sure the weeks ahead have their partitions (PostgreSQL). */
export const PARTITION_JOB_INTERVAL_MS = 60 * 60 * 1000;

/** The events feature's jobs. */
export interface EventsJobs {
  /** Deletes expired Idempotency-Key rows. */
  idempotencyKeys: PeriodicJob;
  /** Creates the events partitions of the weeks ahead, and of the weeks behind that sessions may still start in (events/partitions.ts; nothing on SQLite). */
  partitions: PeriodicJob;
}

export const eventsFeature: ObserveFeature<EventsJobs> = defineFeature('events', async ({ app, context, job, runJobs }) => {
  registerEventRoutes(app, context);
  const idempotencyKeys = job({
    name: 'observe.idempotency-keys',
    intervalMs: IDEMPOTENCY_SWEEP_INTERVAL_MS,
    run: async (now) => {
      await deleteExpiredKeys(context.database, now);
    },
  });
  const ensurePartitions = async (now: number): Promise<void> => {
    if (!(await eventsPartitioned(context.database.db, context.database.dialect))) return;
    // As far back as sessions are kept (weeks past it would only be dropped again by retention).
    const behind = context.config.retentionDays > 0 ? context.config.retentionDays * DAY_MS : PARTITION_WEEKS_BEHIND * PARTITION_WEEK_MS;
    const created = await createPartitionsAhead(context.database.db, now, behind);
    if (created.length > 0) app.log.info({ partitions: created }, 'created events partitions');
  };
  const partitions = job({ name: 'observe.event-partitions', intervalMs: PARTITION_JOB_INTERVAL_MS, run: ensurePartitions });
  // Before the service takes writes, not an hour later and not beside them: a partition attached
  // while a batch routes rows of its week to the default partition fails that batch (the creation
  // itself is safe beside another instance's: createWeekPartition takes an advisory lock).
  if (runJobs) await ensurePartitions(context.clock.now());
  return { idempotencyKeys, partitions };
});
