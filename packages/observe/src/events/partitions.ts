// Partitioned events on PostgreSQL (docs/scale.md#partitions). The events table is range-partitioned
// by `session_start`: the time of the session's first stored event, set once when ingest creates
// the session row and copied into each of its events, so a session's events share one partition.
// A partition holds one ISO week (Monday 00:00 UTC to the next Monday) of session starts; besides
// the weeks, `events_legacy` holds the rows stored before migration 0044 (session_start 0) and
// `events_default` any session whose start falls in a week that has no partition yet (the
// partition job moves them into their week when it creates it). SQLite keeps one unpartitioned
// table with the same column: the DDL here runs on PostgreSQL only.
import { DAY_MS, type DialectName } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveSchema } from '../schema.ts';

export const PARTITION_WEEK_MS = 7 * DAY_MS;
/** 1970-01-05, the first Monday after the epoch: weeks are counted from it. */
const FIRST_MONDAY_MS = 4 * DAY_MS;
/** Weeks created ahead of the current one. */
export const PARTITION_WEEKS_AHEAD = 4;
/** Weeks created behind the current one when no retention period says how far back sessions are kept. */
export const PARTITION_WEEKS_BEHIND = 5;
export const LEGACY_PARTITION = 'events_legacy';
export const DEFAULT_PARTITION = 'events_default';

/** The start (Monday 00:00 UTC) of the week holding `ms`. */
export function weekStart(ms: number): number {
  return Math.floor((ms - FIRST_MONDAY_MS) / PARTITION_WEEK_MS) * PARTITION_WEEK_MS + FIRST_MONDAY_MS;
}

/** The partition of the week starting at `start`: `events_w` and its Monday, e.g. events_w20261123. */
export function weekPartitionName(start: number): string {
  return `events_w${new Date(start).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

export interface EventPartition {
  name: string;
  /** The week's range of session_start, [from, to); null for the legacy and default partitions. */
  from: number | null;
  to: number | null;
}

type Db = Kysely<ObserveSchema> | Transaction<ObserveSchema>;

/** Whether `events` is partitioned here (PostgreSQL after migration 0044). */
export async function eventsPartitioned(db: Db, dialect: DialectName): Promise<boolean> {
  if (dialect !== 'postgres') return false;
  const { rows } = await sql<{ kind: string }>`select c.relkind as kind from pg_class c
    where c.oid = to_regclass(current_schema() || '.events')`.execute(db);
  return rows[0]?.kind === 'p';
}

/** The partitions of `events`, weeks by their range (PostgreSQL). */
export async function eventPartitions(db: Db): Promise<EventPartition[]> {
  const { rows } = await sql<{ name: string; bound: string }>`select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = to_regclass(current_schema() || '.events') order by c.relname`.execute(db);
  return rows.map(({ name, bound }) => {
    const range = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(bound);
    return range ? { name, from: Number(range[1]), to: Number(range[2]) } : { name, from: null, to: null };
  });
}

/**
 * Migration 0044 on PostgreSQL: the unpartitioned `events` becomes the partition `events_legacy`
 * of a new partitioned `events`, without copying a row. The legacy table gains `session_start`
 * with the constant default 0 (no rewrite), is attached for the range [MINVALUE, 1) (PostgreSQL
 * reads it once to check that range, holding the migration's lock), and keeps its primary key and
 * indexes, which the parent's indexes of the same definitions adopt instead of building anew.
 * Sessions stored before stay in it (their session_start is 0) and are deleted row by row by
 * retention until the partition is empty.
 */
export async function partitionEvents(db: Kysely<unknown>): Promise<void> {
  const { rows: indexes } = await sql<{ name: string; definition: string; primary: boolean }>`select i.relname as name,
      pg_get_indexdef(x.indexrelid) as definition, x.indisprimary as primary
    from pg_index x join pg_class i on i.oid = x.indexrelid
    where x.indrelid = to_regclass(current_schema() || '.events')`.execute(db);
  await sql`alter table events rename to ${sql.raw(LEGACY_PARTITION)}`.execute(db);
  for (const index of indexes) await sql`alter index ${sql.ref(index.name)} rename to ${sql.ref(`${index.name}_legacy`.slice(0, 63))}`.execute(db);
  await sql`alter table ${sql.raw(LEGACY_PARTITION)} add column session_start bigint not null default 0`.execute(db);
  await sql`create table events (like ${sql.raw(LEGACY_PARTITION)} including defaults) partition by range (session_start)`.execute(db);
  await sql`alter table events attach partition ${sql.raw(LEGACY_PARTITION)} for values from (minvalue) to (1)`.execute(db);
  await sql`create table ${sql.raw(DEFAULT_PARTITION)} partition of events default`.execute(db);
  await sql`alter table ${sql.raw(DEFAULT_PARTITION)} add primary key (id)`.execute(db);
  // The parent's indexes, as the table had them: each adopts the legacy partition's equal index.
  for (const index of indexes) if (!index.primary) await sql.raw(index.definition).execute(db);
}

/**
 * Creates the partition of the week starting at `from` unless it exists, with the rows of sessions
 * that started in that week moved out of the default partition first (PostgreSQL refuses a
 * partition whose rows the default holds). One transaction: ingest into the default partition
 * waits for it; ingest into the weeks does not. Returns whether it created the partition.
 */
export async function createWeekPartition(db: Kysely<ObserveSchema>, from: number): Promise<boolean> {
  const to = from + PARTITION_WEEK_MS;
  const name = weekPartitionName(from);
  return db.transaction().execute(async (trx) => {
    // One creator at a time (the job's lease already says so; a migration or a test may call too).
    await sql`select pg_advisory_xact_lock(hashtext(current_schema() || ':event_partitions'))`.execute(trx);
    const { rows } = await sql<{ found: string | null }>`select to_regclass(current_schema() || '.' || ${name})::text as found`.execute(trx);
    if (rows[0]?.found !== null && rows[0]?.found !== undefined) return false;
    await sql`lock table ${sql.raw(DEFAULT_PARTITION)} in share row exclusive mode`.execute(trx);
    await sql`create table ${sql.raw(name)} (like events including defaults)`.execute(trx);
    await sql`alter table ${sql.raw(name)} set (autovacuum_vacuum_scale_factor = 0.02)`.execute(trx);
    await sql`with moved as (delete from ${sql.raw(DEFAULT_PARTITION)} where session_start >= ${from} and session_start < ${to} returning *)
      insert into ${sql.raw(name)} select * from moved`.execute(trx);
    await sql`alter table ${sql.raw(name)} add primary key (id)`.execute(trx);
    await sql`alter table events attach partition ${sql.raw(name)} for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(trx);
    return true;
  });
}

/**
 * The weeks the partition job keeps: from the week `behindMs` before `now` to
 * PARTITION_WEEKS_AHEAD weeks after the current one. With a year kept that is 58 partitions
 * (docs/scale.md#partitions).
 */
export function weeksToKeep(now: number, behindMs: number): number[] {
  const weeks: number[] = [];
  const last = weekStart(now) + PARTITION_WEEKS_AHEAD * PARTITION_WEEK_MS;
  for (let week = weekStart(now - behindMs); week <= last; week += PARTITION_WEEK_MS) weeks.push(week);
  return weeks;
}

/** Creates the missing partitions of `weeksToKeep`; returns the names created. */
export async function createPartitionsAhead(db: Kysely<ObserveSchema>, now: number, behindMs: number): Promise<string[]> {
  const existing = new Set((await eventPartitions(db)).map((partition) => partition.name));
  const created: string[] = [];
  for (const week of weeksToKeep(now, behindMs)) {
    if (existing.has(weekPartitionName(week))) continue;
    if (await createWeekPartition(db, week)) created.push(weekPartitionName(week));
  }
  return created;
}
