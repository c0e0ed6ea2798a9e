import { DAY_MS, toIso } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { ObserveContext } from '../context.ts';
import { agentScope } from '../events/index.ts';
import { contenders, describeEvent, embedQuery, RESCORED_EXTRA, rescore, score, TopK, truncate } from '../recall/index.ts';
import type { EventRow } from '../events/index.ts';
import { fetchLessons, type Lesson } from './memory.ts';

/** relevance = SIMILARITY_WEIGHT × similarity + RECENCY_WEIGHT × exp(−age / RECENCY_SCALE_MS). */
export const SIMILARITY_WEIGHT = 0.8;
export const RECENCY_WEIGHT = 0.2;
export const RECENCY_SCALE_MS = 7 * DAY_MS;
/**
 * A session is relevant when its similarity to the topic reaches this. With the local embedder a
 * topic sharing one meaningful word (or stem) with a session summary scores about 0.13 and more,
 * while topic and session sharing nothing but character 3-grams and hash collisions stay below
 * about 0.11; recency alone never makes a session relevant.
 */
export const MIN_SIMILARITY = 0.12;
export const KEY_EVENTS = 5;
const KEY_EVENT_CHARS = 200;

export interface ContextQuery {
  topic: string;
  userId?: string;
  agentId?: string;
  limit: number;
}

export interface KeyEvent {
  id: string;
  eventType: string;
  summary: string;
  timestamp: string;
}

export interface ContextSession {
  sessionId: string;
  agentId: string;
  startedAt: string;
  endedAt?: string;
  summary: string;
  relevanceScore: number;
  keyEvents: KeyEvent[];
}

export interface ContextAnswer {
  topic: string;
  sessions: ContextSession[];
  lessons: Lesson[];
  summary: string;
  totalSessions: number;
}

/** Relevance of a session: similarity blended with recency of its last event (0..1, 6 decimals). */
export function relevance(similarity: number, lastEventAt: number, now: number): number {
  const age = Math.max(0, now - lastEventAt);
  return score(SIMILARITY_WEIGHT * similarity + RECENCY_WEIGHT * Math.exp(-age / RECENCY_SCALE_MS));
}

type KeyEventRow = Pick<EventRow, 'id' | 'event_type' | 'ts' | 'seq' | 'payload'>;

const toKeyEvent = (row: KeyEventRow): KeyEvent => ({
  id: row.id,
  eventType: row.event_type,
  summary: truncate(
    describeEvent(row.event_type, JSON.parse(row.payload) as Record<string, unknown>)
      .replace(/\s+/g, ' ')
      .trim(),
    KEY_EVENT_CHARS,
  ),
  timestamp: toIso(Number(row.ts)),
});

/**
 * Key events of each session, at most KEY_EVENTS: its latest error events first (what went
 * wrong), then its embedded events most similar to the topic (tool calls, LLM calls and answers,
 * approvals… that concern it); listed in time order.
 */
async function keyEvents(ctx: ObserveContext, sessionIds: readonly string[], topic: Float32Array): Promise<Map<string, KeyEvent[]>> {
  const { db } = ctx.database;
  const chosen = new Map<string, string[]>(sessionIds.map((id) => [id, []]));
  for (const id of sessionIds) {
    const errors = await db
      .selectFrom('events')
      .select('id')
      .where('session_id', '=', id)
      .where('is_error', '=', 1)
      .orderBy('ts', 'desc')
      .orderBy('seq', 'desc')
      .limit(KEY_EVENTS)
      .execute();
    chosen.get(id)!.push(...errors.map((e) => e.id));
  }
  const similar = new Map<string, TopK<number>>();
  const index = ctx.vectorIndex;
  index.scan(topic, { events: true, sessions: false, sessionIds: new Set(sessionIds) }, (slot, cosine) => {
    const s = score(cosine);
    if (s <= 0) return;
    const sessionId = index.slot(slot).sessionId;
    let top = similar.get(sessionId);
    if (!top) similar.set(sessionId, (top = new TopK<number>(KEY_EVENTS, (a, b) => index.ranksBefore(a, b))));
    top.push(s, slot);
  });
  for (const [sessionId, top] of similar) {
    const ids = chosen.get(sessionId)!;
    for (const { item } of top.sorted()) {
      if (ids.length >= KEY_EVENTS) break;
      const id = index.slot(item).sourceId;
      if (!ids.includes(id)) ids.push(id);
    }
  }
  const allIds = [...chosen.values()].flat();
  const rows = new Map<string, KeyEventRow>();
  for (let i = 0; i < allIds.length; i += 500) {
    const found = await db
      .selectFrom('events')
      .select(['id', 'event_type', 'ts', 'seq', 'payload'])
      .where('id', 'in', allIds.slice(i, i + 500))
      .execute();
    for (const row of await ctx.sealer.open(found)) rows.set(row.id, row);
  }
  const result = new Map<string, KeyEvent[]>();
  for (const [sessionId, ids] of chosen) {
    const events = ids
      .map((id) => rows.get(id))
      .filter((row) => row !== undefined)
      .sort((a, b) => Number(a.ts) - Number(b.ts) || a.seq - b.seq);
    result.set(sessionId, events.map(toKeyEvent));
  }
  return result;
}

function overview(query: ContextQuery, sessions: readonly ContextSession[], total: number, lessons: readonly Lesson[], errorSessions: number): string {
  const scope = query.agentId !== undefined ? ` for agent ${query.agentId}` : '';
  const parts: string[] = [];
  if (total === 0) {
    parts.push(`No recorded session is relevant to "${query.topic}"${scope}.`);
  } else {
    parts.push(
      `${total} recorded session${total === 1 ? ' is' : 's are'} relevant to "${query.topic}"${scope}; the ${sessions.length} most relevant are listed.`,
    );
    if (errorSessions > 0) parts.push(`${errorSessions} of them had errors.`);
    parts.push(`Most relevant: ${truncate(sessions[0]!.summary, 300)}`);
  }
  if (lessons.length > 0)
    parts.push(`${lessons.length} lesson${lessons.length === 1 ? '' : 's'} from memory: ${lessons.map((l) => l.title || l.id).join('; ')}.`);
  return parts.join(' ');
}

/**
 * GET /api/context: the sessions most relevant to a topic (embedded sessions of the agent, and of
 * the user or no known user, ranked by relevance), each with its summary and key events; lessons
 * from the memory server; an overview sentence.
 */
export async function buildContext(ctx: ObserveContext, query: ContextQuery, log: FastifyBaseLogger): Promise<ContextAnswer> {
  const topic = await embedQuery(ctx, query.topic, log);
  const lessonsPromise = fetchLessons(ctx, query, topic, log);
  // Failures of the memory server are handled inside; this only keeps an unexpected rejection from going unobserved.
  lessonsPromise.catch(() => undefined);
  const index = ctx.vectorIndex;
  await index.refresh(ctx.embedder.model, topic.length);
  const now = ctx.clock.now();
  const relevant = (similarity: number): boolean => similarity >= MIN_SIMILARITY;
  // Ranked by the upper bound of their relevance (from the int8 similarity plus the scan's error
  // bound), then the contenders by their exact one (recall/search.ts contenders, rescore).
  // Relevance grows with similarity, so the bounds of the similarity bound the relevance.
  const candidates = new TopK<{ slot: number; similarity: number; lower: number }>(query.limit + RESCORED_EXTRA, (a, b) => index.ranksBefore(a.slot, b.slot));
  let total = 0;
  // The system agent's alert sessions are bookkeeping, no agent's experience (agentScope).
  index.scan(topic, { events: false, sessions: true, ...agentScope(query.agentId), userId: query.userId }, (slot, cosine, error) => {
    const similarity = score(cosine);
    if (relevant(similarity)) total += 1;
    const upper = score(cosine + error);
    if (!relevant(upper)) return;
    const lower = score(cosine - error);
    const lastTs = index.slot(slot).lastTs;
    candidates.push(relevance(upper, lastTs, now), { slot, similarity, lower: relevant(lower) ? relevance(lower, lastTs, now) : -Infinity });
  });
  const rescored = await rescore(
    ctx,
    topic,
    contenders(candidates.sorted(), query.limit, (c) => c.lower).map(({ item }) => ({ item: item.slot, score: item.similarity })),
  );
  for (const candidate of rescored) total += Number(relevant(candidate.score)) - Number(relevant(candidate.approximate));
  const ranked = rescored
    .filter((c) => relevant(c.score))
    .map((c) => ({ slot: c.slot, relevanceScore: relevance(c.score, index.slot(c.slot).lastTs, now), summary: c.details.text }))
    .sort((a, b) => b.relevanceScore - a.relevanceScore || (index.ranksBefore(a.slot, b.slot) ? -1 : 1))
    .slice(0, query.limit)
    .map(({ slot, relevanceScore, summary }) => ({ relevanceScore, summary, sessionId: index.slot(slot).sourceId }));
  const ids = ranked.map((r) => r.sessionId);
  const [rows, events] = await Promise.all([
    ids.length === 0
      ? []
      : ctx.database.db.selectFrom('sessions').select(['id', 'agent_id', 'started_at', 'ended_at', 'error_count']).where('id', 'in', ids).execute(),
    keyEvents(ctx, ids, topic),
  ]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  const sessions: ContextSession[] = [];
  let errorSessions = 0;
  for (const { relevanceScore, sessionId, summary } of ranked) {
    const row = byId.get(sessionId);
    // Deleted since the scan (retention): left out.
    if (!row) continue;
    if (Number(row.error_count) > 0) errorSessions += 1;
    const session: ContextSession = {
      sessionId,
      agentId: row.agent_id,
      startedAt: toIso(Number(row.started_at)),
      summary,
      relevanceScore,
      keyEvents: events.get(sessionId) ?? [],
    };
    if (row.ended_at !== null) session.endedAt = toIso(Number(row.ended_at));
    sessions.push(session);
  }
  const lessons = await lessonsPromise;
  return { topic: query.topic, sessions, lessons, summary: overview(query, sessions, total, lessons, errorSessions), totalSessions: total };
}
