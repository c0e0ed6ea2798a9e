import { fetchWithTimeout, joinUrl } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { ObserveContext } from '../context.ts';
import { similarity } from '../recall/index.ts';

export interface Lesson {
  id: string;
  title: string;
  content: string;
  category: string;
  importance: number;
  relevanceScore: number;
}

export interface LessonQuery {
  topic: string;
  userId?: string;
  agentId?: string;
  limit: number;
}

const text = (...values: unknown[]): string | undefined => values.find((v): v is string => typeof v === 'string');
const finite = (...values: unknown[]): number | undefined => values.find((v): v is number => typeof v === 'number' && Number.isFinite(v));
const clamp01 = (value: number): number => (value < 0 ? 0 : value > 1 ? 1 : value);

/** One lesson of the memory server's answer, in the context shape; undefined without an id. */
function toLesson(raw: unknown): (Omit<Lesson, 'relevanceScore'> & { relevanceScore?: number }) | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const entry = raw as Record<string, unknown>;
  const id = typeof entry.id === 'number' ? String(entry.id) : text(entry.id);
  if (!id) return undefined;
  const score = finite(entry.relevanceScore, entry.score, entry.similarity);
  return {
    id,
    title: text(entry.title, entry.name) ?? '',
    content: text(entry.content, entry.text, entry.body, entry.lesson) ?? '',
    category: text(entry.category, entry.type) ?? 'general',
    importance: finite(entry.importance) ?? 0.5,
    relevanceScore: score === undefined ? undefined : clamp01(score),
  };
}

/**
 * Lessons for a topic from the memory server (MEMORY_ENABLED): `GET {MEMORY_API_URL}/lessons?
 * query=&limit=&userId=&agentId=` with the memory server's key and MEMORY_TIMEOUT_MS, the
 * same address the `/api/memory/lessons` forwarding reaches. The answer is `{lessons: [...]}` or
 * an array. A lesson without a relevance score of its own (`relevanceScore`, `score` or
 * `similarity`) is scored by the embedder against the topic. Integration disabled: []. Any
 * failure (unreachable, timeout, non-2xx, not JSON) is logged and answers [] — context without
 * lessons is still useful.
 */
export async function fetchLessons(ctx: ObserveContext, query: LessonQuery, topicVector: Float32Array, log: FastifyBaseLogger): Promise<Lesson[]> {
  const memory = ctx.config.memory;
  if (!memory.enabled || !memory.url) return [];
  const params = new URLSearchParams({ query: query.topic, limit: String(query.limit) });
  if (query.userId !== undefined) params.set('userId', query.userId);
  if (query.agentId !== undefined) params.set('agentId', query.agentId);
  const target = `${joinUrl(memory.url, '/lessons')}?${params.toString()}`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (memory.apiKey) headers.authorization = `Bearer ${memory.apiKey}`;
  let body: unknown;
  try {
    const response = await fetchWithTimeout(target, { method: 'GET', headers, timeoutMs: memory.timeoutMs });
    const raw = await response.text();
    if (!response.ok) throw new Error(`memory server answered HTTP ${response.status}`);
    body = JSON.parse(raw);
  } catch (error) {
    log.warn({ err: error, target: new URL(target).origin }, 'lessons unavailable: the memory server did not answer; context has no lessons');
    return [];
  }
  const list = Array.isArray(body) ? body : (body as { lessons?: unknown } | null)?.lessons;
  if (!Array.isArray(list)) {
    log.warn({ target: new URL(target).origin }, 'lessons unavailable: the memory server answer has no lessons array');
    return [];
  }
  const lessons = list.map(toLesson).filter((l) => l !== undefined);
  const unscored = lessons.filter((l) => l.relevanceScore === undefined);
  if (unscored.length > 0) {
    try {
      const vectors = await ctx.embedder.embed(unscored.map((l) => `${l.title}. ${l.content}`));
      unscored.forEach((lesson, i) => {
        lesson.relevanceScore = Math.round(similarity(topicVector, vectors[i]!) * 1e6) / 1e6;
      });
    } catch (error) {
      log.warn({ err: error }, 'lessons could not be scored against the topic; they score 0');
    }
  }
  return lessons
    .map((l) => ({ ...l, relevanceScore: l.relevanceScore ?? 0 }))
    .sort((a, b) => b.relevanceScore - a.relevanceScore || b.importance - a.importance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, query.limit);
}
