/**
 * Two sessions side by side (the compare page): their events aligned as a diff aligns lines, and
 * what each aligned pair and the whole sessions differ by. Pure functions, unit-tested in
 * compare.test.ts and timed on a 10,000-event pair by bench/compare-align.ts.
 */

/** The fields of a step the comparison reads (GET /api/sessions/{id}/steps answers them, derived at ingest). */
export interface ComparedEvent {
  eventType: string;
  toolName: string | null;
  model: string | null;
  costUsd: number | null;
  latencyMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
}

/**
 * What makes two events "the same step": the type and the tool or model it concerns, so a
 * `tool_call` of `web_search` pairs with another `tool_call` of `web_search`, never of `crm_lookup`.
 */
export function stepKey(event: ComparedEvent): string {
  const name = event.toolName ?? event.model;
  return name ? `${event.eventType}:${name}` : event.eventType;
}

/** A row of the alignment: both sides (the same step), only A's (removed in B) or only B's (added in B). */
export interface AlignedRow<T> {
  a: T | null;
  b: T | null;
}

export interface Alignment<T> {
  rows: AlignedRow<T>[];
  /** Events of each side left out because the side has more than `maxEvents`. */
  cutA: number;
  cutB: number;
  /**
   * False when the sessions differ in more than `maxEdits` places: past their common start and end
   * the events are then paired by position (still side by side, but not a shortest diff).
   */
  exact: boolean;
}

export interface AlignOptions {
  /** At most this many events of each side are aligned (the first ones); the page says so. */
  maxEvents?: number;
  /** Myers' diff costs O((n + m) · d) time and O(d²) memory for d differences: past this d it stops. */
  maxEdits?: number;
}

export const ALIGN_MAX_EVENTS = 20_000;
export const ALIGN_MAX_EDITS = 2_000;

/**
 * Aligns two event sequences by their step keys with Myers' shortest edit script (the algorithm of
 * `diff`): matched steps side by side, gaps where one session has a step the other has not.
 */
export function alignEvents<T>(a: readonly T[], b: readonly T[], key: (event: T) => string, options: AlignOptions = {}): Alignment<T> {
  const maxEvents = options.maxEvents ?? ALIGN_MAX_EVENTS;
  const maxEdits = options.maxEdits ?? ALIGN_MAX_EDITS;
  const left = a.slice(0, maxEvents);
  const right = b.slice(0, maxEvents);
  // Keys as small integers: the inner loop compares numbers, not strings.
  const ids = new Map<string, number>();
  const id = (event: T) => {
    const k = key(event);
    let n = ids.get(k);
    if (n === undefined) ids.set(k, (n = ids.size));
    return n;
  };
  const ka = Int32Array.from(left, id);
  const kb = Int32Array.from(right, id);

  // The common start and end need no search.
  let start = 0;
  while (start < ka.length && start < kb.length && ka[start] === kb[start]) start += 1;
  let endA = ka.length;
  let endB = kb.length;
  while (endA > start && endB > start && ka[endA - 1] === kb[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }

  const rows: AlignedRow<T>[] = [];
  for (let i = 0; i < start; i += 1) rows.push({ a: left[i]!, b: right[i]! });
  const middle = myers(ka.subarray(start, endA), kb.subarray(start, endB), maxEdits);
  if (middle) {
    for (const [op, i, j] of middle) {
      rows.push(
        op === 'same' ? { a: left[start + i]!, b: right[start + j]! } : op === 'removed' ? { a: left[start + i]!, b: null } : { a: null, b: right[start + j]! },
      );
    }
  } else {
    for (let i = start, j = start; i < endA || j < endB; i += 1, j += 1) {
      if (i < endA && j < endB && ka[i] === kb[j]) rows.push({ a: left[i]!, b: right[j]! });
      else {
        if (i < endA) rows.push({ a: left[i]!, b: null });
        if (j < endB) rows.push({ a: null, b: right[j]! });
      }
    }
  }
  for (let i = endA, j = endB; i < ka.length; i += 1, j += 1) rows.push({ a: left[i]!, b: right[j]! });
  return { rows, cutA: a.length - left.length, cutB: b.length - right.length, exact: middle !== null };
}

type Op = [op: 'same' | 'removed' | 'added', i: number, j: number];

/** Myers' O((n + m) · d) shortest edit script, or null when it needs more than `maxEdits` edits. */
function myers(a: Int32Array, b: Int32Array, maxEdits: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const limit = Math.min(n + m, maxEdits);
  const offset = limit + 1;
  const v = new Int32Array(2 * limit + 3);
  // trace[d]: the furthest x on each diagonal k (-d…d) after d edits, kept to walk the path back.
  const trace: Int32Array[] = [];
  for (let d = 0; d <= limit; d += 1) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x += 1;
        y += 1;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        trace.push(v.slice(offset - d, offset + d + 1));
        return backtrack(trace, n, m);
      }
    }
    trace.push(v.slice(offset - d, offset + d + 1));
  }
  return null;
}

function backtrack(trace: Int32Array[], n: number, m: number): Op[] {
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d > 0; d -= 1) {
    const previous = trace[d - 1]!;
    // previous holds diagonals -(d-1)…(d-1) at indexes 0…2d-2.
    const at = (k: number) => previous[k + d - 1]!;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x -= 1;
      y -= 1;
      ops.push(['same', x, y]);
    }
    if (down) ops.push(['added', x, (y -= 1)]);
    else ops.push(['removed', (x -= 1), y]);
  }
  while (x > 0 && y > 0) {
    x -= 1;
    y -= 1;
    ops.push(['same', x, y]);
  }
  return ops.reverse();
}

/** Input plus output tokens of a step; null when it has neither. */
function eventTokens(event: ComparedEvent): number | null {
  return event.inputTokens === null && event.outputTokens === null ? null : (event.inputTokens ?? 0) + (event.outputTokens ?? 0);
}

/** B − A of a figure both sides have; null when either lacks it. */
function difference(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : b - a;
}

export interface PairDiff {
  cost: number | null;
  latency: number | null;
}

/** What B's step costs and takes more than A's (negative: less); null on a gap or a step without the figure. */
export function pairDiff<T extends ComparedEvent>(row: AlignedRow<T>): PairDiff {
  if (!row.a || !row.b) return { cost: null, latency: null };
  return { cost: difference(row.a.costUsd, row.b.costUsd), latency: difference(row.a.latencyMs, row.b.latencyMs) };
}

/**
 * The figures of a session its row does not hold (the page takes duration, cost, events, tool calls
 * and errors from GET /api/sessions/{id}): tokens, and the time its LLM calls and tools took.
 */
export interface StepTotals {
  tokens: number;
  /** Summed step latencies (LLM latency plus tool durations). */
  latency: number;
}

export function totalsOf(steps: readonly ComparedEvent[]): StepTotals {
  const totals: StepTotals = { tokens: 0, latency: 0 };
  for (const step of steps) {
    totals.tokens += eventTokens(step) ?? 0;
    totals.latency += step.latencyMs ?? 0;
  }
  return totals;
}

/** The alignment's counts: steps both took, steps only A took, steps only B took. */
export function alignmentCounts<T>(rows: readonly AlignedRow<T>[]): { matched: number; removed: number; added: number } {
  let matched = 0;
  let removed = 0;
  let added = 0;
  for (const row of rows) {
    if (row.a && row.b) matched += 1;
    else if (row.a) removed += 1;
    else added += 1;
  }
  return { matched, removed, added };
}
