/**
 * The judge's view of a session: one line per event in chain (seq) order, bounded so the prompt
 * has a known size whatever the session holds. The bound applies to this text only; the stored,
 * hashed payloads are never cut.
 *
 * - each line is at most TRANSCRIPT_LINE_MAX characters (cut with `…`);
 * - the whole transcript is at most TRANSCRIPT_MAX characters of lines: when the lines do not fit,
 *   the first lines up to half of the budget and the last lines up to the other half are kept and
 *   a marker `[… N events omitted …]` replaces the middle.
 *
 * The same events always give the same transcript.
 */

export const TRANSCRIPT_MAX = 48_000;
export const TRANSCRIPT_LINE_MAX = 2_000;

export interface TranscriptEvent {
  seq: number;
  /** ISO 8601. */
  timestamp: string;
  eventType: string;
  severity: string;
  /** The stored canonical JSON of the payload. */
  payload: string;
}

/** Cuts text to at most `max` UTF-16 units, never through a surrogate pair, ending in `…` when cut. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

export function transcriptLine(event: TranscriptEvent): string {
  return cut(`#${event.seq} ${event.timestamp} ${event.eventType} [${event.severity}] ${event.payload}`, TRANSCRIPT_LINE_MAX);
}

export interface Transcript {
  text: string;
  /** Events given to the builder. */
  events: number;
  /** Events left out of the middle (0 when everything fits). */
  omitted: number;
}

/** Builds a transcript from events fed in order, holding at most the head and tail budgets in memory. */
export class TranscriptBuilder {
  private readonly head: string[] = [];
  private headChars = 0;
  private headOpen = true;
  private tail: string[] = [];
  private tailStart = 0;
  private tailChars = 0;
  private count = 0;
  private dropped = 0;

  constructor(private readonly max = TRANSCRIPT_MAX) {}

  add(event: TranscriptEvent): void {
    this.count += 1;
    const line = transcriptLine(event);
    const size = line.length + 1;
    if (this.headOpen && this.headChars + size <= this.max / 2) {
      this.head.push(line);
      this.headChars += size;
      return;
    }
    this.headOpen = false;
    this.tail.push(line);
    this.tailChars += size;
    // The tail keeps the most recent lines that fit in the other half.
    while (this.tailChars > this.max / 2 && this.tailStart < this.tail.length) {
      this.tailChars -= this.tail[this.tailStart]!.length + 1;
      this.tailStart += 1;
      this.dropped += 1;
    }
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart);
      this.tailStart = 0;
    }
  }

  finish(): Transcript {
    const tail = this.tail.slice(this.tailStart);
    const lines = this.dropped === 0 ? [...this.head, ...tail] : [...this.head, `[… ${this.dropped} events omitted …]`, ...tail];
    return { text: lines.join('\n'), events: this.count, omitted: this.dropped };
  }
}
