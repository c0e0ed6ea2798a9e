import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { embedsLocally } from './embedder.ts';
import { readDetails, type SourceDetails } from './store.ts';
import type { ScanFilter } from './vector-index.ts';

/** The longest text a search embeds: recall's query and the context API's topic. */
export const MAX_QUERY_CHARS = 2000;

/** Scores are cosines clamped to 0..1 and rounded to 6 decimals (what minScore compares with). */
export function score(cosine: number): number {
  if (!(cosine > 0)) return 0;
  if (cosine >= 1) return 1;
  return Math.round(cosine * 1e6) / 1e6;
}

/**
 * The `k` best entries seen, best first: a bounded min-heap on (score, then `better` as the
 * tie-break), so a scan keeps O(k) memory whatever the number of matches.
 */
export class TopK<T> {
  private readonly heap: { score: number; item: T }[] = [];

  constructor(
    private readonly k: number,
    /** Tie-break for equal scores: true when `a` ranks before `b`. */
    private readonly better: (a: T, b: T) => boolean,
  ) {}

  private less(i: number, j: number): boolean {
    const a = this.heap[i]!;
    const b = this.heap[j]!;
    return a.score < b.score || (a.score === b.score && this.better(b.item, a.item));
  }

  private swap(i: number, j: number): void {
    const t = this.heap[i]!;
    this.heap[i] = this.heap[j]!;
    this.heap[j] = t;
  }

  push(score: number, item: T): void {
    const heap = this.heap;
    if (this.k <= 0) return;
    if (heap.length === this.k) {
      const worst = heap[0]!;
      if (score < worst.score || (score === worst.score && !this.better(item, worst.item))) return;
      heap[0] = { score, item };
      this.down(0);
      return;
    }
    heap.push({ score, item });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(start: number): void {
    const n = this.heap.length;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  /** Best first. */
  sorted(): { score: number; item: T }[] {
    return [...this.heap].sort((a, b) => b.score - a.score || (this.better(a.item, b.item) ? -1 : this.better(b.item, a.item) ? 1 : 0));
  }
}

/** Embeds a query; a backend failure is the 500 embedding error (docs/api.md#errors). */
export async function embedQuery(ctx: ObserveContext, text: string, log?: { warn(obj: unknown, msg: string): void }): Promise<Float32Array> {
  try {
    const [vector] = await ctx.embedder.embed([text]);
    if (!vector) throw new Error('the embedder returned no vector');
    return vector;
  } catch (error) {
    log?.warn({ err: error }, 'embedding the query failed');
    throw observeError('embeddingBackend');
  }
}

export type RecallScope = 'all' | 'events' | 'sessions';

export interface RecallQuery {
  query: string;
  scope: RecallScope;
  agentId?: string;
  from?: number;
  to?: number;
  limit: number;
  minScore: number;
}

export interface RecallResult {
  sourceType: 'event' | 'session';
  sourceId: string;
  score: number;
  text: string;
  metadata: Record<string, unknown>;
}

export function scopeFilter(query: Pick<RecallQuery, 'scope' | 'agentId' | 'from' | 'to'>): ScanFilter {
  return {
    events: query.scope !== 'sessions',
    sessions: query.scope !== 'events',
    agentId: query.agentId,
    from: query.from,
    to: query.to,
  };
}

/**
 * Most candidates a search keeps beyond the ones asked for (with the local embedder each contender
 * is embedded again: this bounds a query's work whatever the ties).
 */
export const RESCORED_EXTRA = 32;

/**
 * The candidates (best first) that can end up among the best `wanted` once scored exactly. Each
 * candidate's `score` is the upper bound of its exact ranking value (the scan's score plus the
 * scan's error bound, vector-index.ts scan) and `lower(item)` the lower bound, or -Infinity when
 * the candidate may fail a threshold once scored exactly. With L the `wanted`-th largest lower
 * bound, at least `wanted` candidates rank at L or above exactly, so a candidate whose upper bound
 * lies below L cannot be among the best `wanted`: every other one is kept. (Candidates beyond the
 * scan's TopK of `wanted` + RESCORED_EXTRA by upper bound are not seen here: the guarantee holds
 * while fewer than RESCORED_EXTRA others reach L, e.g. not among hundreds of copies of one text.)
 */
export function contenders<T>(sorted: readonly { score: number; item: T }[], wanted: number, lower: (item: T) => number): { score: number; item: T }[] {
  if (sorted.length <= wanted) return [...sorted];
  const lowers = sorted.map(({ item }) => lower(item)).sort((a, b) => b - a);
  const cut = lowers[wanted - 1]!;
  return sorted.filter(({ score }) => score >= cut);
}

export interface Rescored {
  slot: number;
  /** The int8 score the scan saw. */
  approximate: number;
  /** Exact with the local embedder; the int8 score otherwise. */
  score: number;
  details: SourceDetails;
}

/**
 * Reads the candidates' texts and metadata and, with the local embedder, embeds their texts again
 * to score them exactly against `query`. Candidates whose source is gone (retention) are left out.
 */
export async function rescore(ctx: ObserveContext, query: Float32Array, candidates: readonly { score: number; item: number }[]): Promise<Rescored[]> {
  const index = ctx.vectorIndex;
  const details = await readDetails(
    ctx.database,
    candidates.map(({ item }) => {
      const slot = index.slot(item);
      return { sourceType: slot.sourceType, sourceId: slot.sourceId };
    }),
  );
  const found: Rescored[] = [];
  for (const { score: approximate, item } of candidates) {
    const slot = index.slot(item);
    const detail = details.get(`${slot.sourceType}:${slot.sourceId}`);
    if (detail) found.push({ slot: item, approximate, score: approximate, details: detail });
  }
  if (!embedsLocally(ctx.embedder) || found.length === 0) return found;
  const vectors = await ctx.embedder.embed(found.map((c) => c.details.embedded));
  found.forEach((candidate, i) => {
    const vector = vectors[i]!;
    let dot = 0;
    for (let d = 0; d < vector.length; d++) dot += vector[d]! * query[d]!;
    candidate.score = score(dot);
  });
  return found;
}

/**
 * GET /api/recall: the query's vector against every stored vector of the current model that
 * passes the filters. A match has a score above 0 and at least minScore; `totalResults` counts
 * every match, `results` holds the best `limit` (ties: newer first, then by id).
 */
export async function recall(
  ctx: ObserveContext,
  query: RecallQuery,
  log?: { warn(obj: unknown, msg: string): void },
): Promise<{ results: RecallResult[]; query: string; totalResults: number }> {
  const vector = await embedQuery(ctx, query.query, log);
  const index = ctx.vectorIndex;
  await index.refresh(ctx.embedder.model, vector.length);
  const matches = (s: number): boolean => s > 0 && s >= query.minScore;
  // Ranked by the upper bound of their exact score (the scan's int8 score plus its error bound).
  const candidates = new TopK<{ slot: number; approximate: number; lower: number }>(query.limit + RESCORED_EXTRA, (a, b) => index.ranksBefore(a.slot, b.slot));
  let total = 0;
  index.scan(vector, scopeFilter(query), (slot, cosine, error) => {
    const s = score(cosine);
    if (matches(s)) total += 1;
    const upper = score(cosine + error);
    const lower = score(cosine - error);
    if (matches(upper)) candidates.push(upper, { slot, approximate: s, lower: matches(lower) ? lower : -Infinity });
  });
  const rescored = await rescore(
    ctx,
    vector,
    contenders(candidates.sorted(), query.limit, (c) => c.lower).map(({ item }) => ({ score: item.approximate, item: item.slot })),
  );
  // The candidates count by their exact score, the rest by their int8 one.
  for (const candidate of rescored) total += Number(matches(candidate.score)) - Number(matches(candidate.approximate));
  const results: RecallResult[] = rescored
    .filter((c) => matches(c.score))
    .sort((a, b) => b.score - a.score || (index.ranksBefore(a.slot, b.slot) ? -1 : 1))
    .slice(0, query.limit)
    .map((c) => {
      const slot = index.slot(c.slot);
      return { sourceType: slot.sourceType, sourceId: slot.sourceId, score: c.score, text: c.details.text, metadata: c.details.metadata };
    });
  return { results, query: query.query, totalResults: total };
}
