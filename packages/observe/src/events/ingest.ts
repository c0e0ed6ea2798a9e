import {
  auditedGroupsInFlight,
  BulkInserter,
  GroupCommitter,
  canonicalJson,
  forUpdate,
  hashBytes,
  jsonWords,
  newId,
  toIso,
  type DialectName,
  type PgColumnType,
} from '@vigil/platform';
import { sql, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { AgentRow, EventRow, SessionRow } from './tables.ts';
import { applyEventToSession, newSessionRow } from './session-state.ts';
import { chainBrokenError } from '../errors.ts';
import { ChainVerifier, chainHashOfCanonical, type ChainHead } from './chain.ts';
import { deriveColumns } from './derive.ts';
import type { IncomingEvent } from './schemas.ts';
import { CHAIN_COLUMNS, toLink } from './store.ts';
import { storedWriter } from './stored-writer.ts';
import { SYSTEM_AGENT_ID } from './system-agent.ts';
import type { EventWriter } from './writer.ts';

/** What one session received in a batch: the seqs it appended and the span of their timestamps. */
export interface SessionAppend {
  sessionId: string;
  firstSeq: number;
  lastSeq: number;
  minTs: number;
  maxTs: number;
}

/** What a session's figures are measured from (sessions/figures.ts): its start and the columns of its measured end. */
export type SessionSpan = Pick<SessionRow, 'agent_id' | 'started_at' | 'ended_at' | 'idle_at' | 'last_event_at'>;

/** A session of the batch with its span before the batch (null: the batch created it) and after. */
export interface SessionChange extends SessionAppend {
  before: SessionSpan | null;
  after: SessionSpan;
}

/** A batch inside the ingest transaction, its events chained and inserted: what the other features' writers see. */
export interface CommittingBatch {
  trx: Transaction<ObserveSchema>;
  dialect: DialectName;
  /** The stored rows (seq and hash set) with their payloads, in batch order. */
  events: readonly { row: EventRow; payload: Record<string, unknown> }[];
  /** The same rows alone (events[i].row), listed once for the insert and every derived table. */
  rows: readonly EventRow[];
  /** One per session of the batch, in lock order (sorted ids). */
  sessions: readonly SessionChange[];
  /** When the batch's last request was received. */
  receivedAt: number;
  /** Set by the commit log's writer (WriterPosition.ordersCommits): the log positions this transaction took, in commit order. */
  logPositions: LogPositions | null;
  /** Set before the shared rows' writers: the sessions and agents rows (the system agent's apart) the batch created. */
  created: { sessions: number; agents: number };
}

/** Writes another feature keeps in the ingest transaction (see events/index.ts for the list). */
export type TransactionWriter = (batch: CommittingBatch) => Promise<void>;

/**
 * Where a writer runs in the ingest transaction. By default after the events and sessions, in
 * registration order. `ordersCommits`: the one writer whose head row lock orders commits (the
 * stream log); it runs after those. `sharedRows`: writes to rows that every batch of an agent or
 * an hour updates (rollups, latency sketches; ingest's own agents rows go there too); they run
 * after the commit-ordering lock, which every ingest transaction takes, so on PostgreSQL they never
 * wait on another ingest transaction's row locks, and batches of the same agent do not queue
 * behind each other before that point (they used to from the agents upsert on, for the whole rest
 * of the transaction). The same lock order (head locks, then rollups) as retention's.
 */
export interface WriterPosition {
  ordersCommits?: boolean;
  sharedRows?: boolean;
}

/** Positions first..last of the commit log (stream_log), handed out in commit order. */
export interface LogPositions {
  first: number;
  last: number;
}

/** What after-commit listeners learn of one acknowledged batch besides its appended events. */
export interface CommittedBatch {
  /** The batch's events as stored, with their payloads, in batch order. */
  events: readonly { row: EventRow; payload: Record<string, unknown> }[];
  /** The commit log positions of the batch's transaction (shared with the batches committed with it); null without the commit log. */
  logPositions: LogPositions | null;
}

/** An event validated and stamped, ready to be chained. Built outside the transaction. */
interface PreparedEvent {
  /** seq, prev_hash and hash are filled in under the session lock. */
  row: InsertableEvent;
  timestamp: string;
  payload: Record<string, unknown>;
  canonicalPayload: string;
  canonicalMetadata: string;
  agentName: string | null;
  receivedAt: number;
  /** Set on a verdict: the head its session's chain was verified at before it was computed. */
  verifiedHead?: ChainHead;
  /** The batch's own write in its transaction (AppendOptions.inTransaction), shared by its events. */
  batchWriter?: BatchWriter;
  /** The batch's own write once its events are chained (AppendOptions.afterAppend), shared by its events. */
  batchCompletion?: BatchCompletion;
}

/** A caller's own write kept in its batch's transaction; throwing refuses the batch (only it, under group commit). */
export type BatchWriter = (trx: Transaction<ObserveSchema>) => Promise<void>;

/** A caller's own write in its batch's transaction that needs the batch's events as appended (ids, hashes), in batch order. */
export type BatchCompletion = (trx: Transaction<ObserveSchema>, appended: readonly AppendedEvent[]) => Promise<void>;

export interface AppendOptions {
  /** The credential the batch was written with: each event's written_by, and the batch's writer leaf in the audit log (events/writer.ts). */
  writtenBy: EventWriter;
  /**
   * The head at which the caller verified the chain of the batch's session (a verdict is never
   * appended to a broken chain). Under the session lock, events appended since then are verified
   * too; the batch is refused with 409 chain_broken if they do not link up to the current head.
   */
  verifiedHead?: ChainHead;
  /**
   * Written first in the batch's transaction (before any lock), e.g. OTLP ingest's claim of its
   * spans: what it writes commits with the events or not at all, and what it throws refuses the batch.
   */
  inTransaction?: BatchWriter;
  /**
   * Written in the batch's transaction after its events are chained and inserted, before the other
   * features' writers, e.g. the Idempotency-Key row holding the answer; throwing refuses the batch.
   */
  afterAppend?: BatchCompletion;
}

export interface AppendedEvent {
  id: string;
  hash: string;
  seq: number;
  sessionId: string;
  agentId: string;
  /** Hash of the event before it in the session's chain; null for seq 0. */
  prevHash: string | null;
}

/** toIso of the last time formatted: the events of a batch mostly share their timestamp. */
let lastIso = { ms: Number.NaN, iso: '' };
function isoOf(ms: number): string {
  if (ms !== lastIso.ms) lastIso = { ms, iso: toIso(ms) };
  return lastIso.iso;
}

/** A prepared row's hash until the chain sets it under the session lock (shared: zero bytes cannot be written to). */
const NO_HASH_YET = Buffer.alloc(0);

/** `storedBy`: the batch's writer in its stored form (stored-writer.ts). */
function prepare(event: IncomingEvent, receivedAt: number, storedBy: string): PreparedEvent {
  const ts = event.timestamp ?? receivedAt;
  const severity = event.severity ?? 'info';
  // Stored in canonical form: one serialisation serves both the hash and the row.
  const canonicalPayload = canonicalJson(event.payload);
  const canonicalMetadata = event.metadata === undefined ? '{}' : canonicalJson(event.metadata);
  const agentName = event.eventType === 'session_started' && typeof event.payload.agentName === 'string' ? event.payload.agentName : null;
  return {
    // The derived columns copied into the row (a spread would build the row a second time).
    row: Object.assign(
      {
        id: newId(),
        session_id: event.sessionId,
        // Set from the session row under its lock (appendPrepared).
        session_start: 0,
        agent_id: event.agentId,
        event_type: event.eventType,
        severity,
        ts,
        payload: canonicalPayload,
        metadata: canonicalMetadata,
        seq: -1,
        prev_hash: null,
        hash: NO_HASH_YET,
        written_by: storedBy,
      },
      deriveColumns(event.eventType, severity, event.payload),
    ),
    timestamp: isoOf(ts),
    payload: event.payload,
    canonicalPayload,
    canonicalMetadata,
    agentName: agentName && agentName.length > 0 ? agentName : null,
    receivedAt,
  };
}

/** Every column of an event row, with its PostgreSQL type (BulkInserter). */
const EVENT_COLUMNS = {
  id: 'text',
  session_id: 'text',
  session_start: 'bigint',
  seq: 'integer',
  agent_id: 'text',
  event_type: 'text',
  severity: 'text',
  ts: 'bigint',
  payload: 'text',
  metadata: 'text',
  prev_hash: 'bytea',
  hash: 'bytea',
  written_by: 'text',
  is_error: 'integer',
  cost_usd: 'double precision',
  duration_ms: 'double precision',
  latency_ms: 'double precision',
  tool_name: 'text',
  call_id: 'text',
  provider: 'text',
  model: 'text',
  input_tokens: 'bigint',
  output_tokens: 'bigint',
  complexity_tier: 'text',
  finish_reason: 'text',
} as const satisfies { [Column in keyof EventRow]-?: PgColumnType };

type InsertableEvent = EventRow & Record<string, unknown>;
const eventInserter = new BulkInserter<ObserveSchema, 'events'>('events', EVENT_COLUMNS, 'id');

interface AgentTouch {
  id: string;
  name: string | null;
  firstSeen: number;
  lastSeen: number;
  newSessions: number;
}

/** The span of event times an agents row is known to hold already (committed): first_seen_at ≤ firstSeen, last_seen_at ≥ lastSeen. */
interface AgentSpan {
  firstSeen: number;
  lastSeen: number;
}

/**
 * Agents rows as committed through this instance. Ingest only ever widens a row's span (first_seen_at
 * down, last_seen_at up) and counts sessions up, and nothing else writes those columns, so a batch
 * that names no agent, starts no session and lies inside the known span would change nothing: its
 * upsert is skipped, and with it a row lock that every batch of the agent would wait on. Nothing
 * deletes agents rows either, so a known agent's row exists: its upsert cannot insert one, which
 * the store totals' agent count relies on.
 */
class KnownAgents {
  private readonly spans = new Map<string, AgentSpan>();
  private static readonly MAX_AGENTS = 10_000;

  /** True when this agent's row was committed through this instance (and so exists). */
  has(agentId: string): boolean {
    return this.spans.has(agentId);
  }

  covers(agent: AgentTouch): boolean {
    if (agent.name !== null || agent.newSessions > 0) return false;
    const span = this.spans.get(agent.id);
    return span !== undefined && span.firstSeen <= agent.firstSeen && span.lastSeen >= agent.lastSeen;
  }

  /** After the commit that wrote these spans (as returned by the upserts). */
  committed(written: ReadonlyMap<string, AgentSpan>): void {
    for (const [id, span] of written) {
      if (!this.spans.has(id) && this.spans.size >= KnownAgents.MAX_AGENTS) this.spans.delete(this.spans.keys().next().value as string);
      const known = this.spans.get(id);
      this.spans.set(
        id,
        known === undefined ? span : { firstSeen: Math.min(known.firstSeen, span.firstSeen), lastSeen: Math.max(known.lastSeen, span.lastSeen) },
      );
    }
  }
}

function newAgentRow(agent: AgentTouch): AgentRow {
  return {
    id: agent.id,
    name: agent.name ?? agent.id,
    first_seen_at: agent.firstSeen,
    last_seen_at: agent.lastSeen,
    session_count: agent.newSessions,
    paused_at: null,
    pause_reason: null,
    model_override: null,
    approval_policy_id: null,
  };
}

/** The agent's row when it has none yet; false (nothing written) when it has one. */
async function insertAgentIfNew(trx: Transaction<ObserveSchema>, agent: AgentTouch): Promise<boolean> {
  const inserted = await trx
    .insertInto('agents')
    .values(newAgentRow(agent))
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

async function upsertAgent(trx: Transaction<ObserveSchema>, agent: AgentTouch): Promise<AgentSpan> {
  const row = await trx
    .insertInto('agents')
    .values(newAgentRow(agent))
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        name: agent.name === null ? sql.ref('agents.name') : sql.ref('excluded.name'),
        first_seen_at: sql`case when excluded.first_seen_at < agents.first_seen_at then excluded.first_seen_at else agents.first_seen_at end`,
        last_seen_at: sql`case when excluded.last_seen_at > agents.last_seen_at then excluded.last_seen_at else agents.last_seen_at end`,
        session_count: sql`agents.session_count + excluded.session_count`,
      }),
    )
    .returning(['first_seen_at', 'last_seen_at'])
    .executeTakeFirstOrThrow();
  return { firstSeen: Number(row.first_seen_at), lastSeen: Number(row.last_seen_at) };
}

async function replaceTags(trx: Transaction<ObserveSchema>, session: SessionRow): Promise<void> {
  await trx.deleteFrom('session_tags').where('session_id', '=', session.id).execute();
  const tags = JSON.parse(session.tags) as string[];
  if (tags.length > 0) {
    await trx
      .insertInto('session_tags')
      .values(tags.map((tag) => ({ tag, session_id: session.id })))
      .execute();
  }
}

/** Validated events stamped with ids, defaults and canonical JSON: the work done before any lock. */
export function prepareBatch(events: readonly IncomingEvent[], receivedAt: number, options: AppendOptions): PreparedEvent[] {
  const storedBy = storedWriter(options.writtenBy);
  return events.map((event) => {
    const prepared = prepare(event, receivedAt, storedBy);
    if (options.verifiedHead !== undefined) prepared.verifiedHead = options.verifiedHead;
    if (options.inTransaction !== undefined) prepared.batchWriter = options.inTransaction;
    if (options.afterAppend !== undefined) prepared.batchCompletion = options.afterAppend;
    return prepared;
  });
}

/**
 * Under the session lock: the events appended since `verified` (a head whose chain was verified)
 * must link from it up to the session's current head. Nothing is read when the head has not moved.
 */
async function checkAppendedSince(trx: Transaction<ObserveSchema>, sealing: RowSealing | null, session: SessionRow, verified: ChainHead): Promise<void> {
  if (session.last_seq === verified.lastSeq && session.last_hash === verified.lastHash) return;
  const verifier = new ChainVerifier({ lastSeq: session.last_seq, lastHash: session.last_hash }, verified);
  const stored = await trx.selectFrom('events').select(CHAIN_COLUMNS).where('session_id', '=', session.id).where('seq', '>', verified.lastSeq).execute();
  for (const row of sealing === null ? stored : await sealing.open(stored)) verifier.add(toLink(row));
  const { brokenAt } = verifier.finish();
  if (brokenAt !== null) throw chainBrokenError(session.id, brokenAt);
}

const spanOf = ({ agent_id, started_at, ended_at, idle_at, last_event_at }: SessionRow): SessionSpan => ({
  agent_id,
  started_at,
  ended_at,
  idle_at,
  last_event_at,
});

/**
 * The one write path for events. In a single transaction: create missing sessions, lock every
 * session of the batch (row locks on PostgreSQL, the database write lock on SQLite), assign each
 * event the next seq of its session, hash it onto the chain, insert, and update session counters
 * and agents; then the writers other features keep in the transaction. All events are stored or none.
 */
async function appendPrepared(
  database: ObserveDatabase,
  prepared: readonly PreparedEvent[],
  sessionIdleTimeoutMs: number,
  writers: TransactionWriters,
  knownAgents: KnownAgents,
): Promise<{ appended: AppendedEvent[]; logPositions: LogPositions | null }> {
  const firstBySession = new Map<string, PreparedEvent>();
  for (const event of prepared) {
    if (!firstBySession.has(event.row.session_id)) firstBySession.set(event.row.session_id, event);
  }
  // A fixed lock order (sorted ids) means two batches over the same sessions cannot deadlock.
  const sessionIds = [...firstBySession.keys()].sort();

  const batchWriters = new Set<BatchWriter>();
  for (const event of prepared) if (event.batchWriter !== undefined) batchWriters.add(event.batchWriter);

  const { appended, logPositions, written } = await database.db.transaction().execute(async (trx) => {
    for (const writer of batchWriters) await writer(trx);
    const created = await trx
      .insertInto('sessions')
      .values(
        sessionIds.map((id) => {
          const first = firstBySession.get(id)!;
          return newSessionRow(id, first.row.agent_id, first.row.ts);
        }),
      )
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .execute();
    const createdIds = new Set(created.map((r) => r.id));

    const sessions = new Map<string, SessionRow>();
    const spansBefore = new Map<string, SessionSpan>();
    const locked = forUpdate(trx.selectFrom('sessions').selectAll().where('id', 'in', sessionIds).orderBy('id'), database.dialect);
    for (const row of await locked.execute()) {
      sessions.set(row.id, row);
      if (!createdIds.has(row.id)) spansBefore.set(row.id, spanOf(row));
    }
    const verified = new Set<string>();
    for (const event of prepared) {
      const sessionId = event.row.session_id;
      if (event.verifiedHead === undefined || verified.has(sessionId)) continue;
      verified.add(sessionId);
      await checkAppendedSince(trx, writers.sealing, sessions.get(sessionId)!, event.verifiedHead);
    }

    const tagsChanged = new Set<string>();
    const agents = new Map<string, AgentTouch>();
    const appended: AppendedEvent[] = [];
    const sessionAppends = new Map<string, SessionAppend>();
    // The stored bytes of each session's latest hash in this batch: the next event's prev_hash.
    const lastHashBytes = new Map<string, Buffer>();
    let receivedAt = 0;
    for (const event of prepared) {
      const session = sessions.get(event.row.session_id)!;
      const seq = session.last_seq + 1;
      const sessionAppend = sessionAppends.get(session.id);
      if (sessionAppend === undefined) {
        sessionAppends.set(session.id, { sessionId: session.id, firstSeq: seq, lastSeq: seq, minTs: event.row.ts, maxTs: event.row.ts });
      } else {
        sessionAppend.lastSeq = seq;
        sessionAppend.minTs = Math.min(sessionAppend.minTs, event.row.ts);
        sessionAppend.maxTs = Math.max(sessionAppend.maxTs, event.row.ts);
      }
      receivedAt = Math.max(receivedAt, event.receivedAt);
      const prevHash = session.last_hash;
      const hash = chainHashOfCanonical(
        {
          id: event.row.id,
          seq,
          timestamp: event.timestamp,
          sessionId: event.row.session_id,
          agentId: event.row.agent_id,
          eventType: event.row.event_type,
          severity: event.row.severity,
          prevHash,
        },
        event.canonicalPayload,
        event.canonicalMetadata,
      );
      session.last_seq = seq;
      session.last_hash = hash;
      const tagsBefore = session.tags;
      applyEventToSession(
        session,
        {
          eventType: event.row.event_type,
          ts: event.row.ts,
          isError: event.row.is_error === 1,
          costUsd: event.row.cost_usd,
          payload: event.payload,
        },
        sessionIdleTimeoutMs,
      );
      if (session.tags !== tagsBefore) tagsChanged.add(session.id);
      event.row.seq = seq;
      event.row.session_start = session.session_start;
      event.row.prev_hash = prevHash === null ? null : (lastHashBytes.get(session.id) ?? hashBytes(prevHash));
      event.row.hash = hashBytes(hash);
      lastHashBytes.set(session.id, event.row.hash);
      appended.push({ id: event.row.id, hash, seq, sessionId: session.id, agentId: event.row.agent_id, prevHash });

      const agent = agents.get(event.row.agent_id) ?? {
        id: event.row.agent_id,
        name: null,
        firstSeen: event.row.ts,
        lastSeen: event.row.ts,
        newSessions: 0,
      };
      agent.firstSeen = Math.min(agent.firstSeen, event.row.ts);
      agent.lastSeen = Math.max(agent.lastSeen, event.row.ts);
      if (event.agentName) agent.name = event.agentName;
      agents.set(agent.id, agent);
    }
    for (const id of createdIds) {
      const agent = agents.get(sessions.get(id)!.agent_id);
      if (agent) agent.newSessions += 1;
    }

    const rows = prepared.map((event) => event.row);
    if (writers.sealing === null) await eventInserter.insert(trx, database.dialect, rows, (index) => jsonWords(prepared[index]!.payload).join(' '));
    // Sealed, the rows are stored as ciphertext and give the full-text index no words (their plaintext would outlive an erasure in a copy).
    else await eventInserter.insert(trx, database.dialect, await writers.sealing.seal(prepared, receivedAt), () => '');
    for (const id of sessionIds) {
      const { id: _id, ...changes } = sessions.get(id)!;
      await trx.updateTable('sessions').set(changes).where('id', '=', id).execute();
      if (tagsChanged.has(id)) await replaceTags(trx, sessions.get(id)!);
    }
    const completions = new Map<BatchCompletion, AppendedEvent[]>();
    prepared.forEach((event, index) => {
      if (event.batchCompletion === undefined) return;
      const own = completions.get(event.batchCompletion);
      if (own === undefined) completions.set(event.batchCompletion, [appended[index]!]);
      else own.push(appended[index]!);
    });
    for (const [completion, own] of completions) await completion(trx, own);
    const batch: CommittingBatch = {
      trx,
      dialect: database.dialect,
      events: prepared,
      rows,
      sessions: sessionIds.map((id) => ({ ...sessionAppends.get(id)!, before: spansBefore.get(id) ?? null, after: spanOf(sessions.get(id)!) })),
      receivedAt,
      logPositions: null,
      created: { sessions: createdIds.size, agents: 0 },
    };
    for (const writer of writers.rows) await writer(batch);
    if (writers.ordersCommits !== null) await writers.ordersCommits(batch);
    // Shared rows last (WriterPosition): agents in sorted order, then the derived tables (the store totals first).
    const written = new Map<string, AgentSpan>();
    let newAgents = 0;
    for (const agentId of [...agents.keys()].sort()) {
      const agent = agents.get(agentId)!;
      if (knownAgents.covers(agent)) continue;
      // An agent this instance has not committed may have no row yet: whether this batch creates
      // it is what the totals count (an upsert does not tell), so its row is inserted apart.
      if (!knownAgents.has(agentId) && (await insertAgentIfNew(trx, agent))) {
        written.set(agentId, { firstSeen: agent.firstSeen, lastSeen: agent.lastSeen });
        if (agentId !== SYSTEM_AGENT_ID) newAgents += 1;
      } else {
        written.set(agentId, await upsertAgent(trx, agent));
      }
    }
    batch.created.agents = newAgents;
    for (const writer of writers.sharedRows) await writer(batch);
    return { appended, logPositions: batch.logPositions, written };
  });
  knownAgents.committed(written);
  return { appended, logPositions };
}

interface TransactionWriters {
  rows: readonly TransactionWriter[];
  ordersCommits: TransactionWriter | null;
  sharedRows: readonly TransactionWriter[];
  /** How rows' content is stored when it is sealed (crypto-shredding, EventAppender.sealWith); null: stored as it is. */
  sealing: RowSealing | null;
}

/** Sealing of events' payload and metadata (encryption/ EventSealer). */
export interface RowSealing {
  /** Sealed copies of a batch's rows, in order, written in its transaction; the rows themselves stay in the clear for the other writers. */
  seal(events: readonly { row: EventRow; payload: Record<string, unknown> }[], now: number): Promise<EventRow[]>;
  /** The rows read with their content opened. */
  open<Row extends { payload?: string | null; metadata?: string | null }>(rows: readonly Row[]): Promise<Row[]>;
}

/**
 * What a batch's events become before anything of them is prepared, hashed or stored (redaction);
 * throwing refuses the batch.
 */
export type EventTransform = (events: readonly IncomingEvent[]) => Promise<readonly IncomingEvent[]>;

/** The one entry to the event store: batches from concurrent requests share a transaction (group commit). */
export class EventAppender {
  private readonly committer: GroupCommitter<PreparedEvent[], { appended: AppendedEvent[]; logPositions: LogPositions | null }>;

  private readonly writers: TransactionWriters & { rows: TransactionWriter[]; sharedRows: TransactionWriter[] } = {
    rows: [],
    ordersCommits: null,
    sharedRows: [],
    sealing: null,
  };
  private readonly knownAgents = new KnownAgents();
  private transform: EventTransform | null = null;

  constructor(database: ObserveDatabase, sessionIdleTimeoutMs: number, maxGroupEvents = 5000) {
    this.committer = new GroupCommitter(
      async (batches) => {
        const { appended, logPositions } = await appendPrepared(database, batches.flat(), sessionIdleTimeoutMs, this.writers, this.knownAgents);
        let offset = 0;
        return batches.map((batch) => ({ appended: appended.slice(offset, (offset += batch.length)), logPositions }));
      },
      { maxInFlight: auditedGroupsInFlight(database.dialect), maxGroupSize: maxGroupEvents, sizeOf: (batch) => batch.length },
    );
  }

  private readonly committedListeners: ((appended: AppendedEvent[], committed: CommittedBatch) => void)[] = [];

  /** Stores every event's payload and metadata sealed (encryption/): the chain hash stays over the plaintext. */
  sealWith(sealing: RowSealing): void {
    this.writers.sealing = sealing;
  }

  /**
   * A write kept in the ingest transaction, after the events and sessions, in registration order
   * within its position (WriterPosition). There can be only one `ordersCommits` writer.
   */
  inTransaction(writer: TransactionWriter, position: WriterPosition = {}): void {
    if (position.sharedRows === true) {
      this.writers.sharedRows.push(writer);
    } else if (position.ordersCommits === true) {
      if (this.writers.ordersCommits !== null) throw new Error('the ingest transaction already has its commit-ordering writer');
      this.writers.ordersCommits = writer;
    } else {
      this.writers.rows.push(writer);
    }
  }

  /** Work started after each acknowledged batch is durable; never awaited by the request. */
  afterCommit(listener: (appended: AppendedEvent[], committed: CommittedBatch) => void): void {
    this.committedListeners.push(listener);
  }

  /** The one transform every batch goes through first, on every path into the store (see EventTransform). */
  beforeHash(transform: EventTransform): void {
    if (this.transform !== null) throw new Error('the event store already has its transform');
    this.transform = transform;
  }

  async append(events: readonly IncomingEvent[], receivedAt: number, options: AppendOptions): Promise<AppendedEvent[]> {
    const stored = this.transform === null ? events : await this.transform(events);
    const prepared = prepareBatch(stored, receivedAt, options);
    const { appended, logPositions } = await this.committer.submit(prepared);
    const committed: CommittedBatch = { events: prepared, logPositions };
    for (const listener of this.committedListeners) listener(appended, committed);
    return appended;
  }
}
