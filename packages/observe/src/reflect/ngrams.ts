/**
 * Counting of tool-call n-grams for `GET /api/reflect?analysis=tool_sequences`: runs of n
 * consecutive tool_call events of one session (in seq order), here n = 2 and 3.
 */

export interface NgramFigures {
  /** Tool names in call order. */
  tools: string[];
  /** Occurrences (overlapping runs count separately: a→a→a holds a→a twice). */
  frequency: number;
  /** Sessions holding at least one occurrence. */
  sessions: number;
  /** Occurrences in which at least one of the n calls ran into a tool_error. */
  failed: number;
}

interface Counts {
  frequency: number;
  sessions: number;
  failed: number;
}

interface Call {
  tool: string;
  failed: boolean;
}

// Tool names never hold NUL, so it can join them into a key.
const SEPARATOR = '\u0000';

/**
 * Feed calls session by session, each session's calls in seq order (`add`), then read `results`.
 * Memory: one entry per distinct n-gram plus the last few calls of the current session.
 */
export class NgramCounter {
  private readonly counts = new Map<string, Counts>();
  private readonly maxN: number;
  private session: string | undefined;
  private window: Call[] = [];
  private seenInSession = new Set<string>();

  constructor(private readonly sizes: readonly number[] = [2, 3]) {
    this.maxN = Math.max(...sizes);
  }

  add(sessionId: string, tool: string, failed: boolean): void {
    if (sessionId !== this.session) this.endSession(sessionId);
    this.window.push({ tool, failed });
    if (this.window.length > this.maxN) this.window.shift();
    for (const n of this.sizes) {
      if (this.window.length < n) continue;
      const run = this.window.slice(this.window.length - n);
      const key = run.map((c) => c.tool).join(SEPARATOR);
      let counts = this.counts.get(key);
      if (counts === undefined) {
        counts = { frequency: 0, sessions: 0, failed: 0 };
        this.counts.set(key, counts);
      }
      counts.frequency += 1;
      if (run.some((c) => c.failed)) counts.failed += 1;
      if (!this.seenInSession.has(key)) {
        this.seenInSession.add(key);
        counts.sessions += 1;
      }
    }
  }

  private endSession(next: string | undefined): void {
    this.session = next;
    this.window = [];
    this.seenInSession = new Set();
  }

  /** Every n-gram: most frequent first, then in more sessions, then longer, then by tool names. */
  results(): NgramFigures[] {
    return [...this.counts.entries()]
      .map(([key, c]) => ({ key, tools: key.split(SEPARATOR), ...c }))
      .sort((a, b) => b.frequency - a.frequency || b.sessions - a.sessions || b.tools.length - a.tools.length || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map(({ tools, frequency, sessions, failed }) => ({ tools, frequency, sessions, failed }));
  }

  /** Distinct n-grams seen so far. */
  get size(): number {
    return this.counts.size;
  }
}
