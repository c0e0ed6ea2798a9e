import type { ServerResponse } from 'node:http';
import { notifyListeners, sha256Hex } from '@vigil/platform';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { eventJson } from '../events/index.ts';
import { activeKeyIds } from '../auth/index.ts';
import { findSessions, toSession } from '../sessions/index.ts';
import { formatCursor, readStreamPage, resumeVerdict, streamHead, type StreamCursor, type StreamFilters } from './log.ts';

/** Events read at once: also the most one slow client holds in memory, since the next read waits for its socket to drain. */
const PAGE_SIZE = 100;
/** A stream reads the database at most this often; a burst of commits in between is read in one go. */
const MIN_READ_INTERVAL_MS = 100;

export interface StreamRequest {
  filters: StreamFilters;
  include: { events: boolean; sessions: boolean };
  /** The Last-Event-ID to resume from; undefined starts at the current end. */
  resumeFrom?: StreamCursor;
  /** The key the stream was opened with (directly or through a stream token); null with AUTH_DISABLED. */
  keyId: string | null;
}

/** What the first message (`ready`) says about the start. */
interface ReadyData {
  /** True when the stream continues from the Last-Event-ID given. */
  resumed: boolean;
  /** Set when a Last-Event-ID was given but cannot be continued from: the stream starts at the current end. */
  reset?: 'expired' | 'unknown';
}

function message(type: string, id: string, data: string): string {
  return `event: ${type}\nid: ${id}\ndata: ${data}\n\n`;
}

/**
 * The live streams of this instance (GET /api/stream). Each stream reads the database from its own
 * cursor whenever it is woken: after a commit on this instance (`committed`), on a PostgreSQL
 * notification from any instance, and at every heartbeat (which also covers a lost notification).
 */
export class StreamHub {
  private readonly streams = new Set<EventStream>();
  /** Streams open or being opened: what the limit counts. */
  private slots = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private listening: Promise<(() => Promise<void>) | undefined> | undefined;
  private notifying = false;
  private notifyAgain = false;
  private closed = false;
  /** One channel per schema, so deployments sharing a PostgreSQL database do not wake each other (hashed to fit its 63-byte names). */
  private readonly channel: string;

  constructor(
    readonly ctx: ObserveContext,
    readonly log: FastifyBaseLogger,
  ) {
    this.channel = `vigil_stream_${sha256Hex(ctx.database.schema ?? '').slice(0, 24)}`;
  }

  /** After each ingest commit on this instance: wake the local streams, and through PostgreSQL those of the other instances. */
  committed(): void {
    if (this.closed) return;
    this.wakeAll();
    if (this.ctx.database.dialect === 'postgres') this.notifyOtherInstances();
  }

  /** One NOTIFY in flight at a time; commits meanwhile are covered by one more. */
  private notifyOtherInstances(): void {
    if (this.notifying) {
      this.notifyAgain = true;
      return;
    }
    this.notifying = true;
    notifyListeners(this.ctx.database, this.channel)
      .catch((error: unknown) => this.log.warn({ err: error }, 'could not notify other instances of new events'))
      .finally(() => {
        this.notifying = false;
        if (this.notifyAgain && !this.closed) {
          this.notifyAgain = false;
          this.notifyOtherInstances();
        }
      });
  }

  private wakeAll(): void {
    for (const stream of this.streams) stream.wake();
  }

  /** PostgreSQL: LISTEN from the first stream on (SQLite: one process, committed() wakes everything). */
  private listen(): Promise<unknown> {
    const { database } = this.ctx;
    if (database.listen === undefined) return Promise.resolve();
    this.listening ??= database.listen(this.channel, () => this.wakeAll());
    return this.listening;
  }

  /**
   * Answers the request with an event stream: 503 when the instance already serves
   * STREAM_MAX_CONNECTIONS. The first message, `ready`, carries the start cursor as its id.
   */
  async open(reply: FastifyReply, request: StreamRequest): Promise<void> {
    if (this.closed) throw observeError('unavailable', 'The service is shutting down; retry shortly');
    if (this.slots >= this.ctx.config.stream.maxConnections) {
      void reply.header('retry-after', '5');
      throw observeError('streamLimit');
    }
    this.slots += 1;
    let stream: EventStream;
    try {
      await this.listen();
      // Listening before the head is read: a commit after this read wakes the stream.
      const head = await streamHead(this.ctx.database);
      let cursor: StreamCursor = { pos: head, seq: null };
      const ready: ReadyData = { resumed: false };
      if (request.resumeFrom !== undefined) {
        const verdict = await resumeVerdict(this.ctx.database, request.resumeFrom, head);
        if (verdict === 'ok') {
          cursor = request.resumeFrom;
          ready.resumed = true;
        } else {
          ready.reset = verdict;
        }
      }
      // close() may have run during the reads above: a stream opened now would hold the server open.
      if (this.closed) throw observeError('unavailable', 'The service is shutting down; retry shortly');
      stream = new EventStream(this, reply.raw, request, cursor);
      reply.hijack();
      stream.start(ready);
    } catch (error) {
      this.slots -= 1;
      throw error;
    }
    if (reply.raw.destroyed) {
      this.slots -= 1;
      return;
    }
    this.streams.add(stream);
    reply.raw.once('close', () => {
      stream.stop();
      this.streams.delete(stream);
      this.slots -= 1;
      if (this.streams.size === 0) this.stopHeartbeat();
    });
    this.heartbeat ??= setInterval(() => {
      for (const s of this.streams) s.tick();
      void this.endRevoked();
    }, this.ctx.config.stream.heartbeatMs);
    stream.wake();
  }

  /** A stream whose key was revoked (or deleted) since it opened ends at the next heartbeat. */
  private async endRevoked(): Promise<void> {
    const keyIds = [...new Set([...this.streams].map((s) => s.keyId).filter((id): id is string => id !== null))];
    try {
      const active = await activeKeyIds(this.ctx.database, keyIds);
      for (const stream of this.streams) if (stream.keyId !== null && !active.has(stream.keyId)) stream.end();
    } catch (error) {
      // Database unavailable: the next heartbeat checks again.
      this.log.warn({ err: error }, 'event stream key check failed');
    }
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  /** On shutdown: every stream ends (clients reconnect elsewhere with their Last-Event-ID), and the LISTEN connection closes. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopHeartbeat();
    for (const stream of this.streams) stream.end();
    const stop = await this.listening;
    await stop?.();
  }
}

/** One client's stream: reads from its cursor when woken, one read at a time, and never ahead of what the client takes. */
class EventStream {
  private reading = false;
  private readAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private lastReadAt = 0;
  private stopped = false;
  /** Heartbeats in a row at which the socket had not drained yet. */
  private stalledTicks = 0;

  constructor(
    private readonly hub: StreamHub,
    private readonly res: ServerResponse,
    private readonly request: StreamRequest,
    private cursor: StreamCursor,
  ) {}

  start(ready: ReadyData): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // Proxies such as nginx would otherwise buffer the stream.
      'x-accel-buffering': 'no',
      // A stream is never followed by another request on its connection.
      connection: 'close',
    });
    this.res.write(message('ready', formatCursor(this.cursor), JSON.stringify(ready)));
  }

  wake(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    if (this.timer !== undefined) return;
    const wait = this.lastReadAt + MIN_READ_INTERVAL_MS - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.read();
      }, wait);
      return;
    }
    void this.read();
  }

  private async read(): Promise<void> {
    if (this.stopped) return;
    this.reading = true;
    this.lastReadAt = Date.now();
    const { database } = this.hub.ctx;
    const { filters, include } = this.request;
    try {
      for (;;) {
        const head = await streamHead(database);
        const rows = await this.hub.ctx.sealer.open(await readStreamPage(database, this.cursor, head, filters, PAGE_SIZE));
        let text = '';
        if (include.sessions && rows.length > 0) {
          // Before the events, with the cursor before them: a client cut off in between gets the sessions again.
          const ids = [...new Set(rows.map((row) => row.session_id))];
          const sessions = new Map((await findSessions(database, ids)).map((session) => [session.id, session]));
          for (const id of ids) {
            const session = sessions.get(id);
            // A session deleted by retention meanwhile has nothing to report.
            if (session) text += message('session', formatCursor(this.cursor), JSON.stringify(toSession(session)));
          }
        }
        if (include.events) {
          for (const row of rows) text += message('event', formatCursor({ pos: row.stream_pos, seq: row.seq }), eventJson(row));
        }
        if (this.stopped) return;
        const full = rows.length === PAGE_SIZE;
        const last = rows.at(-1);
        // A short page means everything up to the head was read.
        this.cursor = full && last ? { pos: last.stream_pos, seq: last.seq } : { pos: head, seq: null };
        if (text !== '' && !this.res.write(text)) await this.drained();
        if (!full || this.stopped) break;
      }
    } catch (error) {
      // Database unavailable: the next heartbeat tries again.
      this.readAgain = false;
      this.hub.log.warn({ err: error }, 'event stream read failed');
    } finally {
      this.reading = false;
    }
    if (this.readAgain) {
      this.readAgain = false;
      this.wake();
    }
  }

  /** Backpressure: the next read waits until the client has taken what was written. */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /**
   * Heartbeat: a comment line, with the cursor as `id:` (EventSource keeps it as its last event id
   * without firing an event), so a filtered stream with nothing to send still resumes from near
   * the end. A client that took nothing for a whole heartbeat interval is dropped; it can resume
   * from its last id.
   */
  tick(): void {
    if (this.stopped) return;
    if (this.res.writableNeedDrain) {
      this.stalledTicks += 1;
      if (this.stalledTicks >= 2) this.res.destroy();
      return;
    }
    this.stalledTicks = 0;
    this.res.write(`: heartbeat\nid: ${formatCursor(this.cursor)}\n\n`);
    this.wake();
  }

  get keyId(): string | null {
    return this.request.keyId;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Shutdown: the response ends (the connection closes after it). */
  end(): void {
    this.stop();
    this.res.end();
  }
}
