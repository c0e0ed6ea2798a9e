import assert from 'node:assert/strict';
import { hashBytes, hashHex, ManualClock, type Clock } from '@vigil/platform';
import type { TestBackend } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { buildObserveService, type ObserveOptions, type ObserveService } from './app.ts';
import { observeConfigFromEnvironment, type ObserveConfig } from './config.ts';
import { observeErrors } from './errors.ts';
import { alertSessionId } from './alerts/index.ts';
import { chainHashOfCanonical } from './events/index.ts';
import type { ObserveDatabase, ObserveSchema } from './schema.ts';
import type { EventRow } from './events/index.ts';

// Internals the cross-service tests of packages/cli drive directly (migrations under concurrency, alert ticks).
export { evaluateRules } from './alerts/evaluator.ts';
export { observeMigrations } from './migrations.ts';

/** Where the test instance's manual clock starts. */
export const TEST_NOW = Date.parse('2026-11-22T10:00:00.000Z');
const MINUTE = 60_000;
/** ISO timestamp `minutes` before TEST_NOW. */
export const ago = (minutes: number): string => new Date(TEST_NOW - minutes * MINUTE).toISOString();

export interface TestObserve {
  service: ObserveService;
  config: ObserveConfig;
  clock: ManualClock | Clock;
  /** Raw key of an API key created through the API. */
  key: string;
  /** What the server records as the writer of events that key posts: `key:<its id>` (events/writer.ts). */
  keyWriter: string;
  /** Authenticated request through the real app. */
  call(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestObserveOptions {
  env?: Record<string, string>;
  clock?: Clock;
  createKey?: boolean;
  /** Share this database (another test instance's) instead of a fresh one. */
  database?: ObserveConfig['database'];
  /** Evaluate guardrails after each ingest commit, as production does (default false: tests drive the engine). */
  evaluateGuardrails?: boolean;
  /** The data key store (default: the one the configuration names). */
  dataKeyStore?: ObserveOptions['dataKeyStore'];
}

/** The real observe app on a fresh database of the given backend, with a first key created over HTTP. */
export async function startTestObserve(backend: TestBackend, options: TestObserveOptions = {}): Promise<TestObserve> {
  const { dataDir, ...fresh } = backend.freshDatabase();
  const base = observeConfigFromEnvironment({ LOG_LEVEL: 'silent', ...options.env }, { dataDir });
  const config: ObserveConfig = { ...base, database: options.database ?? fresh };
  const clock = options.clock ?? new ManualClock(TEST_NOW);
  const service = await buildObserveService(config, {
    clock,
    runJobs: false,
    evaluateGuardrails: options.evaluateGuardrails ?? false,
    validateResponses: true,
    dataKeyStore: options.dataKeyStore,
  });
  let key = '';
  let keyWriter = 'none';
  if (options.createKey ?? true) {
    const response = await service.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'test' } });
    if (response.statusCode !== 201) throw new Error(`first key creation failed: ${response.body}`);
    const created = response.json() as { key: string; id: string };
    key = created.key;
    keyWriter = `key:${created.id}`;
  }
  return {
    service,
    config,
    clock,
    key,
    keyWriter,
    call: (request) => service.app.inject({ ...request, headers: { authorization: `Bearer ${key}`, ...request.headers } }),
    close: () => service.app.close(),
  };
}

/**
 * Tampering for tests: stores a copy of the event `sourceId` straight into the database, never
 * through ingest (so nothing links it into the chain or moves the session's head), with `changes`
 * applied over it: at least a new id, e.g. also a seq past the head or an existing seq.
 */
export async function insertEventCopy(database: ObserveDatabase, sourceId: string, changes: Partial<EventRow> & Pick<EventRow, 'id'>): Promise<EventRow> {
  const source = await database.db.selectFrom('events').selectAll().where('id', '=', sourceId).executeTakeFirstOrThrow();
  const row = { ...source, ...changes };
  await database.db.insertInto('events').values(row).execute();
  return row;
}

/**
 * Tampering for tests, as a forger who knows the published recipe: relinks every stored event of
 * the session in seq order (each prevHash the hash before it, each hash recomputed from the row)
 * and moves the session's recorded head to the last one, so that every check of the rows alone
 * passes. Only the audit log still knows what was there.
 */
export async function relinkChain(database: ObserveDatabase, sessionId: string): Promise<void> {
  const rows = await database.db.selectFrom('events').selectAll().where('session_id', '=', sessionId).orderBy('seq').execute();
  let previous: string | null = null;
  for (const row of rows) {
    const link = {
      id: row.id,
      seq: row.seq,
      timestamp: new Date(row.ts).toISOString(),
      sessionId,
      agentId: row.agent_id,
      eventType: row.event_type,
      severity: row.severity,
      prevHash: previous,
    };
    const hash = chainHashOfCanonical(link, row.payload, row.metadata);
    if (hash !== hashHex(row.hash) || (row.prev_hash === null ? null : hashHex(row.prev_hash)) !== previous) {
      await database.db
        .updateTable('events')
        .set({ hash: hashBytes(hash), prev_hash: previous === null ? null : hashBytes(previous) })
        .where('id', '=', row.id)
        .execute();
    }
    previous = hash;
  }
  await database.db
    .updateTable('sessions')
    .set({ last_seq: rows.length === 0 ? -1 : rows.at(-1)!.seq, last_hash: previous })
    .where('id', '=', sessionId)
    .execute();
}

/** The manual clock the test instance was started with (the default). */
export function clockOf(observe: TestObserve): ManualClock {
  assert.ok(observe.clock instanceof ManualClock, 'this test needs the default manual clock');
  return observe.clock;
}

/** An event as a client posts it (tests build them loosely, so invalid ones can be sent too). */
export type EventInput = Record<string, unknown>;

export const started = (sessionId: string, agentId: string, timestamp: string, payload: Record<string, unknown> = {}): EventInput => ({
  sessionId,
  agentId,
  eventType: 'session_started',
  timestamp,
  payload,
});
export const ended = (sessionId: string, agentId: string, timestamp: string, reason: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'session_ended',
  timestamp,
  payload: { reason },
});
/** A call of the tool `search`. */
export const toolCall = (sessionId: string, agentId: string, timestamp: string, callId = 'c1'): EventInput => ({
  sessionId,
  agentId,
  eventType: 'tool_call',
  timestamp,
  payload: { toolName: 'search', callId, arguments: {} },
});
export const custom = (sessionId: string, agentId: string, timestamp: string, type = 'step'): EventInput => ({
  sessionId,
  agentId,
  eventType: 'custom',
  timestamp,
  payload: { type, data: {} },
});

/** What POST /api/events acknowledges for each event, in the order sent. */
export interface EventAck {
  id: string;
  hash: string;
}

/** The most events one POST /api/events takes. */
const INGEST_BATCH = 1000;

/** Ingests the events through POST /api/events (in batches of the most one request takes); each batch must be accepted whole. */
export async function ingestEvents(observe: TestObserve, events: readonly unknown[]): Promise<EventAck[]> {
  const acks: EventAck[] = [];
  for (let i = 0; i < events.length; i += INGEST_BATCH) {
    const batch = events.slice(i, i + INGEST_BATCH);
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events: batch } });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as { ingested: number; events: EventAck[] };
    assert.equal(body.ingested, batch.length);
    acks.push(...body.events);
  }
  return acks;
}

/** ingestEvents, answering the new events' ids. */
export async function ingest(observe: TestObserve, events: readonly unknown[]): Promise<string[]> {
  return (await ingestEvents(observe, events)).map((ack) => ack.id);
}

/** The observe error body: `{ error, code, status, details? }` and nothing else. */
export interface ObserveErrorBody {
  error: string;
  code: string;
  status: number;
  details?: { path: string; message: string }[];
}

const CATALOGUE_CODES = new Set(Object.values(observeErrors).map((spec) => spec.code));

/** Asserts that a parsed body is the observe error body for this status (a message, a catalogue code, no other keys). */
export function assertErrorShape(body: unknown, status: number, context = ''): ObserveErrorBody {
  const record = body as Record<string, unknown>;
  assert.equal(record.status, status, context);
  assert.equal(typeof record.error, 'string', context);
  assert.ok((record.error as string).length > 0, `${context}: a human-readable message`);
  assert.ok(CATALOGUE_CODES.has(record.code as string), `${context}: code ${String(record.code)} is one of the catalogue's`);
  if (record.details !== undefined) {
    assert.ok(Array.isArray(record.details), context);
    for (const detail of record.details as Record<string, unknown>[]) {
      assert.equal(typeof detail.path, 'string', context);
      assert.equal(typeof detail.message, 'string', context);
    }
  }
  assert.deepEqual(
    Object.keys(record).filter((key) => !['error', 'code', 'status', 'details'].includes(key)),
    [],
    `${context}: only error, code, status, details`,
  );
  return record as unknown as ObserveErrorBody;
}

/** Asserts the response's status and that its body is the observe error body; answers the body. */
export function assertErrorBody(response: LightMyRequestResponse, status: number, context = ''): ObserveErrorBody {
  assert.equal(response.statusCode, status, `${context}: ${response.body}`);
  return assertErrorShape(response.json(), status, context);
}

/**
 * Creates an alert rule that fires on any event of the last 30 days and runs one alert tick: its
 * alert_triggered event lands in the system agent's session `alert:<ruleId>`, whose id is returned.
 */
export async function fireAlertRule(observe: TestObserve, name: string): Promise<string> {
  const rule = await observe.call({
    method: 'POST',
    url: '/api/alerts/rules',
    payload: { name, condition: 'event_count_exceeds', threshold: 0, windowMinutes: 43_200 },
  });
  assert.equal(rule.statusCode, 201, rule.body);
  assert.equal(await observe.service.jobs.alerts.tick(), true);
  return alertSessionId((rule.json() as { id: string }).id);
}

/** Every table's rows as text, for scans for a value that must be stored nowhere (SQLite: the rows as JSON; PostgreSQL: each row cast to text). */
export async function everyTableText(observe: TestObserve): Promise<Map<string, string>> {
  const { db, dialect } = observe.service.context.database;
  const texts = new Map<string, string>();
  if (dialect === 'sqlite') {
    const tables = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db);
    for (const { name } of tables.rows) {
      const rows = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(db);
      texts.set(
        name,
        JSON.stringify(rows.rows, (_key, value: unknown) => (Buffer.isBuffer(value) ? value.toString('latin1') : value)),
      );
    }
  } else {
    const schema = (observe.config.database as { schema: string }).schema;
    const tables = await sql<{
      name: string;
    }>`select table_name as name from information_schema.tables where table_schema = ${schema} and table_type = 'BASE TABLE'`.execute(db);
    for (const { name } of tables.rows) {
      const rows = await sql<{ row: string }>`select t::text as row from ${sql.table(name)} t`.execute(db);
      texts.set(name, rows.rows.map((r) => r.row).join('\n'));
    }
  }
  return texts;
}

/**
 * Puts the database back as migration 0043 left it: an unpartitioned events table with its
 * primary key and indexes (their definitions read from the partitioned table) and no
 * session_start anywhere, and 0044 not recorded (tests of a migration of an existing database).
 */
export async function backToBefore0044(db: Kysely<ObserveSchema>, dialect: 'sqlite' | 'postgres'): Promise<void> {
  await sql`drop index sessions_session_start`.execute(db);
  await sql`alter table sessions drop column session_start`.execute(db);
  if (dialect === 'postgres') {
    const { rows: indexes } = await sql<{ definition: string }>`select pg_get_indexdef(x.indexrelid) as definition
      from pg_index x where x.indrelid = to_regclass(current_schema() || '.events')`.execute(db);
    const { rows: columns } = await sql<{ name: string }>`select column_name as name from information_schema.columns
      where table_schema = current_schema() and table_name = 'events' and column_name <> 'session_start' order by ordinal_position`.execute(db);
    const list = sql.join(columns.map((column) => sql.ref(column.name)));
    await sql`create table events_flat (like events including defaults)`.execute(db);
    await sql`alter table events_flat drop column session_start`.execute(db);
    await sql`insert into events_flat (${list}) select ${list} from events order by session_id, seq`.execute(db);
    await sql`drop table events`.execute(db);
    await sql`alter table events_flat rename to events`.execute(db);
    await sql`alter table events add primary key (id)`.execute(db);
    await sql`alter table events set (autovacuum_vacuum_scale_factor = 0.02)`.execute(db);
    for (const index of indexes) await sql.raw(index.definition.replace(' ON ONLY ', ' ON ')).execute(db);
  } else {
    await sql`alter table events drop column session_start`.execute(db);
  }
  await db
    .deleteFrom('schema_migrations' as never)
    .where('name' as never, '=', '0044_event_partitions' as never)
    .execute();
}

/** One node of a PostgreSQL plan: its type, and the index and relation it reads, if any. */
export interface PlanNode {
  type: string;
  index?: string;
  relation?: string;
}

/** The nodes of a statement's PostgreSQL plan (EXPLAIN (FORMAT JSON)), outermost first, planned for its parameters. */
export async function planNodes(db: Kysely<ObserveSchema>, query: CompiledQuery): Promise<PlanNode[]> {
  const result = await db.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
  const nodes: PlanNode[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (typeof record['Node Type'] === 'string') {
        const { 'Index Name': index, 'Relation Name': relation } = record;
        nodes.push({ type: record['Node Type'], ...(typeof index === 'string' && { index }), ...(typeof relation === 'string' && { relation }) });
      }
      Object.values(record).forEach(walk);
    }
  };
  walk(result.rows[0]!['QUERY PLAN']);
  return nodes;
}
