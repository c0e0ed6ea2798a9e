import type { ChainHead, ChainVerdict, LoggedChainRow, StoredLink } from '../events/index.ts';

/** A session's verdict with everything it was computed from: the head and the stored chain text. */
export interface VerifiedSession {
  head: ChainHead;
  /** storedChainText of every stored event of the session when the verdict was computed. */
  storedText: string;
  verdict: ChainVerdict;
  /** The timeline read with it (rows in timeline order and their links), when it was a timeline read. */
  timeline?: { rows: LoggedChainRow[]; links: StoredLink[] };
}

/**
 * Verdicts (and timelines) of sessions, each with every input it is a function of: the head read
 * from the session row and the stored chain text of all its rows. A read that finds the same head
 * and has the database confirm that the rows stored now give exactly the same text (every byte of
 * every row, compared by the database: events/store.ts storedChainTextMatches) gets the same
 * verdict, since the verdict is a pure function of those bytes; any byte changed, a row added,
 * removed or moved, or a leaf changed, and the text differs, so the rows are read and verified in
 * full. Nothing here is trusted without that comparison, so the memo may be shared by every
 * service in the process. Bounded by the text it holds (least recently used first out).
 */
export class VerifiedSessions {
  private readonly entries = new Map<string, { session: VerifiedSession; size: number }>();
  private size = 0;

  constructor(
    private readonly maxChars: number,
    /** A session with a longer stored text is not remembered: it is read and verified in full every time. */
    readonly maxSessionChars: number,
  ) {}

  /** The remembered verdict of the session at this head, if any (still to be confirmed against the rows). */
  recall(sessionId: string, head: ChainHead): VerifiedSession | undefined {
    const entry = this.entries.get(sessionId);
    if (entry === undefined || entry.session.head.lastSeq !== head.lastSeq || entry.session.head.lastHash !== head.lastHash) return undefined;
    this.entries.delete(sessionId);
    this.entries.set(sessionId, entry);
    return entry.session;
  }

  remember(sessionId: string, session: VerifiedSession): void {
    this.forget(sessionId);
    if (session.storedText.length > this.maxSessionChars) return;
    // A timeline holds about twice as much again: its rows' strings and its response body.
    const size = session.storedText.length * (session.timeline === undefined ? 1 : 3);
    this.entries.set(sessionId, { session, size });
    this.size += size;
    for (const [id, entry] of this.entries) {
      if (this.size <= this.maxChars) break;
      this.entries.delete(id);
      this.size -= entry.size;
    }
  }

  forget(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (entry === undefined) return;
    this.entries.delete(sessionId);
    this.size -= entry.size;
  }
}
