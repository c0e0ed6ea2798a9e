/**
 * The disk spool of `@vigil/sdk/node` (option `spoolDir`): a journal of the event queue in a
 * directory, so events whose track() returned survive the agent's crash (kill -9) and are sent
 * at its next start — a batch already sent once with its original Idempotency-Key, so observe
 * stores it once.
 *
 * Layout: `spool.lock` (the process id of its owner: one process per directory) and segment files
 * `segment-<n>.jsonl`, one JSON record per line, appended with a synchronous write each:
 *   {"e":id,"v":event}      an event pushed
 *   {"b":key,"ids":[...]}   these events frozen as batch `key`, about to be sent
 *   {"s":[...]}             these events settled (stored, or dropped and reported)
 * A process writes only segments it created (a new one at each start, and every `segmentBytes`),
 * so a record torn by a crash is only ever the last line of a segment; it does not parse and is
 * skipped (its event's track() had not returned). Segments are deleted oldest first once all their
 * events are settled: a batch record always follows its events, so none outlives what it names.
 * Writes go to the operating system, not to the disk (no fsync): the spool survives the process,
 * not a power cut.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { VigilSpoolError } from './errors.ts';
import type { JournalEntry, QueueJournal, RestoredBatch } from './queue.ts';

export const DEFAULT_SPOOL_BYTES = 256 * 1024 * 1024;
const SEGMENT_BYTES = 4 * 1024 * 1024;
const LOCK_FILE = 'spool.lock';
const SEGMENT = /^segment-(\d+)\.jsonl$/;

/** Directories a spool of this process holds (a second client on one directory is refused like another process). */
const held = new Set<string>();

interface Segment {
  number: number;
  path: string;
  bytes: number;
  /** Events recorded in this segment and not yet settled. */
  outstanding: number;
}

type SpoolRecord = { e: number; v: unknown } | { b: string; ids: number[] } | { s: number[] };

function parseRecord(line: string): SpoolRecord | undefined {
  try {
    const record = JSON.parse(line) as SpoolRecord;
    return typeof record === 'object' && record !== null ? record : undefined;
  } catch {
    return undefined; // a record torn by a crash
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class DiskSpool<E> implements QueueJournal<E> {
  private readonly segments: Segment[] = [];
  /** The segment of each unsettled event. */
  private readonly segmentOf = new Map<number, Segment>();
  private active: { segment: Segment; fd: number } | undefined;
  private nextId = 1;
  private totalBytes = 0;
  private released = false;
  private restored: { batches: RestoredBatch<E>[]; events: JournalEntry<E>[] } = { batches: [], events: [] };

  /** Opens (creating) the directory, takes its lock, and reads what an earlier process left. Throws VigilSpoolError. */
  constructor(
    readonly directory: string,
    private readonly maxBytes = DEFAULT_SPOOL_BYTES,
    private readonly segmentBytes = SEGMENT_BYTES,
  ) {
    try {
      mkdirSync(directory, { recursive: true });
    } catch (error) {
      throw new VigilSpoolError(`The spool directory ${directory} cannot be created: ${(error as Error).message}`, directory, error);
    }
    this.lock();
    try {
      this.read();
    } catch (error) {
      this.release();
      throw new VigilSpoolError(`The spool in ${directory} cannot be read: ${(error as Error).message}`, directory, error);
    }
  }

  /** Events in the spool not yet settled. */
  get outstanding(): number {
    return this.segmentOf.size;
  }

  private get lockPath(): string {
    return join(this.directory, LOCK_FILE);
  }

  private lock(): void {
    if (held.has(this.directory)) throw new VigilSpoolError(`The spool ${this.directory} is already open in this process`, this.directory);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.lockPath, 'wx');
        writeSync(fd, String(process.pid));
        closeSync(fd);
        held.add(this.directory);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new VigilSpoolError(`The spool lock ${this.lockPath} cannot be created: ${(error as Error).message}`, this.directory, error);
        }
      }
      const owner = Number(readFileSync(this.lockPath, 'utf8').trim());
      // The same process id as ours is a crashed earlier incarnation (a container's pid 1): this process holds no lock here.
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && processRuns(owner)) {
        throw new VigilSpoolError(`The spool ${this.directory} is in use by process ${owner}`, this.directory);
      }
      unlinkSync(this.lockPath); // left by a process that is gone
    }
    throw new VigilSpoolError(`The spool lock ${this.lockPath} could not be taken`, this.directory);
  }

  /** Rebuilds the unsettled events and their batches from the segments, oldest first. */
  private read(): void {
    const found = readdirSync(this.directory)
      .map((name) => SEGMENT.exec(name))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => ({ number: Number(match[1]), path: join(this.directory, match[0]), bytes: 0, outstanding: 0 }))
      .sort((a, b) => a.number - b.number);
    const events = new Map<number, { entry: JournalEntry<E>; segment: Segment }>();
    const batchOf = new Map<number, string>();
    const batches = new Map<string, number[]>();
    let highest = 0;
    for (const segment of found) {
      const text = readFileSync(segment.path, 'utf8');
      segment.bytes = Buffer.byteLength(text);
      this.totalBytes += segment.bytes;
      this.segments.push(segment);
      for (const line of text.split('\n')) {
        if (line === '') continue;
        const record = parseRecord(line);
        if (!record) continue;
        if ('e' in record) {
          events.set(record.e, { entry: { id: record.e, event: record.v as E }, segment });
          highest = Math.max(highest, record.e);
        } else if ('b' in record) {
          batches.set(record.b, record.ids);
          for (const id of record.ids) batchOf.set(id, record.b);
        } else if ('s' in record) {
          for (const id of record.s) events.delete(id);
        }
      }
    }
    this.nextId = highest + 1;
    for (const { entry, segment } of events.values()) {
      segment.outstanding += 1;
      this.segmentOf.set(entry.id, segment);
    }
    // A batch is resent as it was first sent (same events, same key); events of no batch are queued anew.
    const restoredBatches: RestoredBatch<E>[] = [];
    const inBatch = new Set<number>();
    for (const [key, ids] of batches) {
      if (!ids.every((id) => events.has(id) && batchOf.get(id) === key)) continue;
      restoredBatches.push({ key, entries: ids.map((id) => events.get(id)!.entry) });
      for (const id of ids) inBatch.add(id);
    }
    const loose = [...events.values()]
      .map(({ entry }) => entry)
      .filter((entry) => !inBatch.has(entry.id))
      .sort((a, b) => a.id - b.id);
    this.restored = { batches: restoredBatches, events: loose };
    this.prune();
  }

  restore(): { batches: RestoredBatch<E>[]; events: JournalEntry<E>[] } {
    const restored = this.restored;
    this.restored = { batches: [], events: [] };
    return restored;
  }

  append(event: E, json: string): number | undefined {
    const id = this.nextId;
    const line = `{"e":${id},"v":${json}}\n`;
    if (this.totalBytes + Buffer.byteLength(line) > this.maxBytes) return undefined;
    const segment = this.write(line);
    if (!segment) return undefined;
    this.nextId += 1;
    segment.outstanding += 1;
    this.segmentOf.set(id, segment);
    return id;
  }

  freeze(key: string, ids: readonly number[]): void {
    this.write(`${JSON.stringify({ b: key, ids })}\n`);
  }

  settle(ids: readonly number[]): void {
    if (ids.length === 0) return;
    this.write(`${JSON.stringify({ s: ids })}\n`);
    for (const id of ids) {
      const segment = this.segmentOf.get(id);
      if (!segment) continue;
      segment.outstanding -= 1;
      this.segmentOf.delete(id);
    }
    this.prune();
  }

  /** Closes the spool: its lock is released; segments holding unsettled events stay for the next start. */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.active) closeSync(this.active.fd);
    this.active = undefined;
    if (this.segmentOf.size === 0) for (const segment of this.segments.splice(0)) removeFile(segment.path);
    removeFile(this.lockPath);
    held.delete(this.directory);
  }

  /** Appends one record to the active segment (a new one past segmentBytes); undefined when the write failed. */
  private write(line: string): Segment | undefined {
    if (this.released) return undefined;
    try {
      if (!this.active || this.active.segment.bytes >= this.segmentBytes) this.rotate();
      const { segment, fd } = this.active!;
      const bytes = Buffer.from(line);
      writeSync(fd, bytes);
      segment.bytes += bytes.length;
      this.totalBytes += bytes.length;
      return segment;
    } catch {
      return undefined; // disk full or gone: the event stays in memory only, reported by the caller
    }
  }

  private rotate(): void {
    if (this.active) closeSync(this.active.fd);
    const number = (this.segments.at(-1)?.number ?? 0) + 1;
    const path = join(this.directory, `segment-${String(number).padStart(6, '0')}.jsonl`);
    const segment: Segment = { number, path, bytes: 0, outstanding: 0 };
    this.active = { segment, fd: openSync(path, 'a') };
    this.segments.push(segment);
  }

  /** Deletes the oldest segments while every event they hold is settled (never the one being written). */
  private prune(): void {
    while (this.segments.length > 0 && this.segments[0]!.outstanding === 0 && this.segments[0] !== this.active?.segment) {
      const segment = this.segments.shift()!;
      removeFile(segment.path);
      this.totalBytes -= segment.bytes;
    }
  }
}

function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
