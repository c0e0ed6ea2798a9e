import { BackgroundDrain, toIso } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { ObserveContext } from '../context.ts';
import type { SessionRow } from '../events/index.ts';
import type { EmbeddingQueueRow } from './tables.ts';
import { EmbeddingBackendError, MAX_EMBED_CHARS, type StoredVector, type StoredVectorEmbedder } from './embedder.ts';
import { claimDue, completeRows, failRows } from './queue.ts';
import { embeddedEventsQuery, pruneEmbeddings, tombstone, writeEmbeddings, type NewEmbedding } from './store.ts';
import { eventDetails, sessionSummary, sessionUser, STORED_TEXT_CHARS, truncate, type EmbeddedEventSource, type SummaryEvent } from './text.ts';

/** How often the `observe.embeddings` job drains the queue (the backstop of the kick after each commit). */
export const EMBEDDINGS_INTERVAL_MS = 5000;
/** Queue rows claimed and embedded together. */
const CLAIM_BATCH = 256;
/** A session summary reads its first and last events only, so its cost does not grow with the session. */
const SUMMARY_HEAD_EVENTS = 20;
const SUMMARY_TAIL_EVENTS = 50;
/** How long one periodic run may keep draining before it leaves the rest to the next run. */
const RUN_BUDGET_MS = 30_000;
/**
 * While events keep arriving (a commit in the last INGEST_ACTIVE_MS), the worker pauses after each
 * batch for PAUSE_FACTOR × the batch's time: it takes at most a fifth of the process, ingestion
 * keeps the rest, and the queue catches up when the load drops.
 */
const INGEST_ACTIVE_MS = 250;
const PAUSE_FACTOR = 4;

interface Job {
  row: EmbeddingQueueRow;
  /**
   * What to embed (`text` in full, up to MAX_EMBED_CHARS; a session's stored cut to
   * STORED_TEXT_CHARS, an event's not stored: readDetails builds it from the event). null: nothing
   * to embed (source gone or without text): the row is completed and any old vector tombstoned.
   */
  embedding: Omit<NewEmbedding, 'model' | 'dims' | 'vector'> | null;
}

/**
 * Drains the embedding queue after commit: claims due rows, builds their texts from the stored
 * events and sessions, embeds them in batches, stores the vectors and removes the rows in one
 * transaction. A failed batch goes back to the queue with exponential backoff; nothing is lost on
 * restart because rows leave the queue only in the transaction that stores their vectors.
 */
export class EmbeddingWorker {
  private stopped = false;
  private readonly background = new BackgroundDrain(
    () => this.drain(Infinity, ['event']),
    (error) => this.log.error({ err: error }, 'embedding drain failed'),
  );
  private lastPruneAt = -Infinity;
  private lastCommitAt = -Infinity;

  constructor(
    private readonly ctx: ObserveContext,
    /** Embeds the drained texts into stored vectors (the local embedder on its thread, or the remote backend); same model as ctx.embedder. */
    private readonly embedder: StoredVectorEmbedder,
    private readonly log: FastifyBaseLogger,
    /** Whether commits start a drain (off in tests that drive the job's tick themselves). */
    private readonly kickEnabled: boolean,
    private readonly pruneIntervalMs: number,
  ) {}

  /**
   * After an ingest commit: starts a drain of the event rows in the background (or asks the
   * running one to go again). Never awaited. Session rows wait for the periodic job, so a busy
   * session is summarised at most once per EMBEDDINGS_INTERVAL_MS however many batches touch it.
   */
  kick(): void {
    this.lastCommitAt = performance.now();
    if (this.kickEnabled) this.background.kick();
  }

  /** One run of the periodic job: drain what is due (bounded in time), then prune after retention. */
  async runJob(now: number): Promise<void> {
    await this.drain(RUN_BUDGET_MS, ['event', 'session']);
    if (now - this.lastPruneAt >= this.pruneIntervalMs) {
      this.lastPruneAt = now;
      const pruned = await pruneEmbeddings(this.ctx.database, now);
      if (pruned > 0) this.log.info({ pruned }, 'embeddings of deleted sessions removed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.background.stop();
  }

  /**
   * Claims and processes batches of the given types until nothing is due (or the budget is
   * spent). Returns rows embedded.
   */
  async drain(budgetMs: number, types: readonly EmbeddingQueueRow['source_type'][]): Promise<number> {
    const started = Date.now();
    let embedded = 0;
    let remaining = [...types];
    while (!this.stopped && remaining.length > 0 && Date.now() - started < budgetMs) {
      const now = this.ctx.clock.now();
      const claimMs = Math.max(60_000, this.ctx.config.embeddings.timeoutMs * 4);
      const batchStarted = performance.now();
      const rows = await claimDue(this.ctx.database, now, now + claimMs, CLAIM_BATCH, remaining[0]!);
      if (rows.length === 0) {
        // Nothing (more) due of this type: events first, then sessions (their summaries then see the new events).
        remaining = remaining.slice(1);
        continue;
      }
      embedded += await this.process(rows);
      const finished = performance.now();
      if (finished - this.lastCommitAt < INGEST_ACTIVE_MS) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, PAUSE_FACTOR * (finished - batchStarted))));
      } else {
        // Let requests in between batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return embedded;
  }

  private async process(rows: EmbeddingQueueRow[]): Promise<number> {
    const jobs = await this.buildJobs(rows);
    const work = jobs.filter((job) => job.embedding !== null);
    try {
      const vectors = await this.embedder.embedStored(work.map((job) => job.embedding!.text));
      await this.store(jobs, vectors);
      return work.length;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof EmbeddingBackendError && !error.retryable && work.length > 1) {
        // One input the backend refuses must not hold back the others: each is tried alone.
        let done = 0;
        for (const job of jobs) done += await this.process([job.row]);
        return done;
      }
      this.log.warn({ err: error, rows: rows.length }, 'embedding failed; rows stay queued and are retried with backoff');
      await failRows(this.ctx.database, rows, this.ctx.clock.now(), message);
      return 0;
    }
  }

  private async store(jobs: Job[], vectors: StoredVector[]): Promise<void> {
    const { database } = this.ctx;
    const model = this.embedder.model;
    const writes: NewEmbedding[] = [];
    let v = 0;
    const gone: { source_type: EmbeddingQueueRow['source_type']; source_id: string }[] = [];
    for (const job of jobs) {
      if (job.embedding === null) {
        gone.push({ source_type: job.row.source_type, source_id: job.row.source_id });
        continue;
      }
      const { dims, vector } = vectors[v++]!;
      const { embedding } = job;
      // A session's text and metadata are stored (text cut to STORED_TEXT_CHARS); an event's are not.
      const session = job.row.source_type === 'session';
      writes.push({
        source_type: embedding.source_type,
        source_id: embedding.source_id,
        agent_id: embedding.agent_id,
        session_id: embedding.session_id,
        user_id: embedding.user_id,
        ts: embedding.ts,
        last_ts: embedding.last_ts,
        text: session ? storedText(embedding.text) : '',
        metadata: session ? embedding.metadata : '',
        model,
        dims,
        vector,
      });
    }
    const now = this.ctx.clock.now();
    await database.db.transaction().execute(async (trx) => {
      await writeEmbeddings(trx, database.dialect, writes);
      await tombstone(trx, gone, now);
      await completeRows(
        trx,
        jobs.map((job) => job.row),
      );
    });
  }

  private async buildJobs(rows: EmbeddingQueueRow[]): Promise<Job[]> {
    const { db } = this.ctx.database;
    const idsByStart = new Map<number | null, string[]>();
    for (const row of rows) {
      if (row.source_type !== 'event') continue;
      const start = row.session_start === null ? null : Number(row.session_start);
      const ids = idsByStart.get(start);
      if (ids) ids.push(row.source_id);
      else idsByStart.set(start, [row.source_id]);
    }
    const events = new Map<string, EmbeddedEventSource>();
    for (const [start, ids] of idsByStart) {
      for (let i = 0; i < ids.length; i += 500) {
        for (const event of await embeddedEventsQuery(db, ids.slice(i, i + 500), start).execute()) events.set(event.id, event);
      }
    }
    const jobs: Job[] = [];
    for (const row of rows) {
      if (row.source_type === 'event') {
        const event = events.get(row.source_id);
        jobs.push({ row, embedding: event ? eventEmbedding(event) : null });
      } else {
        jobs.push({ row, embedding: await this.sessionEmbedding(row.source_id) });
      }
    }
    return jobs;
  }

  private async sessionEmbedding(id: string): Promise<Job['embedding']> {
    const { db } = this.ctx.database;
    const session = await db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
    if (!session) return null;
    const columns = ['id', 'event_type', 'is_error', 'ts', 'seq', 'payload', 'metadata'] as const;
    // The session's own partition only (its events all carry its session_start).
    const ofSession = db.selectFrom('events').select(columns).where('session_id', '=', id).where('session_start', '=', Number(session.session_start));
    const head = await ofSession.orderBy('ts').orderBy('seq').limit(SUMMARY_HEAD_EVENTS).execute();
    let events: SummaryEvent[] = head;
    if (head.length === SUMMARY_HEAD_EVENTS && session.event_count > SUMMARY_HEAD_EVENTS) {
      const tail = await ofSession.orderBy('ts', 'desc').orderBy('seq', 'desc').limit(SUMMARY_TAIL_EVENTS).execute();
      const seen = new Set(head.map((e) => e.id));
      events = [...head, ...tail.reverse().filter((e) => !seen.has(e.id))];
    }
    return sessionEmbeddingOf(session, events);
  }
}

function eventEmbedding(event: EmbeddedEventSource): Job['embedding'] {
  const details = eventDetails(event);
  if (details === null) return null;
  return {
    source_type: 'event',
    source_id: event.id,
    agent_id: event.agent_id,
    session_id: event.session_id,
    user_id: null,
    ts: Number(event.ts),
    last_ts: Number(event.ts),
    text: truncate(details.text, MAX_EMBED_CHARS),
    metadata: '',
  };
}

function sessionEmbeddingOf(session: SessionRow, events: readonly SummaryEvent[]): Job['embedding'] {
  const tags = JSON.parse(session.tags) as string[];
  const userId = sessionUser(tags, events);
  const metadata: Record<string, unknown> = {
    sessionId: session.id,
    agentId: session.agent_id,
    agentName: session.agent_name,
    status: session.status,
    startedAt: toIso(Number(session.started_at)),
    lastEventAt: toIso(Number(session.last_event_at)),
    eventCount: Number(session.event_count),
    errorCount: Number(session.error_count),
    tags,
  };
  if (session.ended_at !== null) metadata.endedAt = toIso(Number(session.ended_at));
  if (userId !== null) metadata.userId = userId;
  return {
    source_type: 'session',
    source_id: session.id,
    agent_id: session.agent_id,
    session_id: session.id,
    user_id: userId,
    ts: Number(session.started_at),
    last_ts: Number(session.last_event_at),
    text: sessionSummary(session, events),
    metadata: JSON.stringify(metadata),
  };
}

/** The stored text of an embedding: what was embedded, cut for storage. */
export function storedText(text: string): string {
  return truncate(text, STORED_TEXT_CHARS);
}
