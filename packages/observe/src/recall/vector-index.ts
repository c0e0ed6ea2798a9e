import { isStoredVector, readCodesInto } from '@vigil/platform';
import type { ObserveDatabase } from '../schema.ts';
import { quantiseQuery, scanError, VectorBlock } from './dot-kernel.ts';
import { readChanges, readMeta, type ChangedRow } from './store.ts';

/** Vectors per storage block: growth adds blocks, nothing is ever copied. */
const BLOCK = 4096;
/** Rows read per query while catching up. */
const PAGE = 2000;

const EVENT = 0;
const SESSION = 1;

export interface ScanFilter {
  /** Which source types to score. */
  events: boolean;
  sessions: boolean;
  agentId?: string;
  /** Leave out this agent's vectors (context leaves out the system agent's alert sessions). */
  excludeAgentId?: string;
  /** Inclusive bounds on `ts` (event time; a session's startedAt). */
  from?: number;
  to?: number;
  /** Only these sessions (context's key events). */
  sessionIds?: ReadonlySet<string>;
  /** Context's userId: sessions of this user or of no known user. */
  userId?: string;
}

export interface Slot {
  sourceType: 'event' | 'session';
  sourceId: string;
  sessionId: string;
  agentId: string;
  ts: number;
  lastTs: number;
}

/**
 * The vectors of one model in memory, per process: blocks of 4,096 vectors kept as their stored
 * int8 codes (each block in its own WebAssembly memory, one byte a dimension, plus a Float32 scale
 * a vector; scored by the SIMD kernel of dot-kernel.ts), plus parallel arrays of what the filters
 * need. Loaded once, then brought up to date before each search by
 * reading only rows written after its watermark (the embeddings write-order counter), so it sees
 * vectors written by any instance sharing the database. Search is a linear scan of every vector
 * (its scores carry a bound, see scan); text and metadata stay in the database and are read for
 * the results only.
 */
export class VectorIndex {
  private dims = 0;
  private model = '';
  private blocks: VectorBlock[] = [];
  private count = 0;
  private alive = new Uint8Array(0);
  private kind = new Uint8Array(0);
  private agent = new Int32Array(0);
  private session = new Int32Array(0);
  private user = new Int32Array(0);
  private ts = new Float64Array(0);
  private lastTs = new Float64Array(0);
  private ids: string[] = [];
  private readonly slotOf = new Map<string, number>();
  private readonly codes = new Map<string, number>();
  private readonly strings: string[] = [];
  private watermark = 0;
  private live = 0;
  private refreshing: Promise<void> | null = null;

  constructor(private readonly database: ObserveDatabase) {}

  /** Whether the index holds a live vector of this source (tests of erasure). */
  holds(sourceType: 'event' | 'session', sourceId: string): boolean {
    const slot = this.slotOf.get(`${sourceType}:${sourceId}`);
    return slot !== undefined && this.alive[slot] === 1;
  }

  /** Vectors currently searchable (for status). */
  get size(): number {
    return this.live;
  }

  /**
   * Brings the index up to date with the database for `model` vectors of `dims` length (another
   * model or length starts a fresh index). Concurrent callers share one refresh.
   */
  async refresh(model: string, dims: number): Promise<void> {
    while (this.refreshing) await this.refreshing;
    this.refreshing = this.catchUp(model, dims).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async catchUp(model: string, dims: number): Promise<void> {
    const meta = await readMeta(this.database);
    if (model !== this.model || dims !== this.dims || meta.purgedSeq > this.watermark) this.reset(model, dims);
    if (meta.lastSeq <= this.watermark) return;
    for (;;) {
      const rows = await readChanges(this.database, model, this.watermark, PAGE);
      for (const row of rows) this.apply(row);
      if (rows.length > 0) this.watermark = Number(rows[rows.length - 1]!.updated_seq);
      if (rows.length < PAGE) break;
    }
    // Rows of other models advance the counter too; nothing of ours lies below it.
    this.watermark = Math.max(this.watermark, meta.lastSeq);
  }

  private reset(model: string, dims: number): void {
    this.model = model;
    this.dims = dims;
    this.blocks = [];
    this.count = 0;
    this.live = 0;
    this.alive = new Uint8Array(0);
    this.kind = new Uint8Array(0);
    this.agent = new Int32Array(0);
    this.session = new Int32Array(0);
    this.user = new Int32Array(0);
    this.ts = new Float64Array(0);
    this.lastTs = new Float64Array(0);
    this.ids = [];
    this.slotOf.clear();
    this.codes.clear();
    this.strings.length = 0;
    this.watermark = 0;
  }

  private code(value: string | null): number {
    if (value === null) return -1;
    let code = this.codes.get(value);
    if (code === undefined) {
      code = this.strings.length;
      this.strings.push(value);
      this.codes.set(value, code);
    }
    return code;
  }

  private grow(): void {
    const capacity = Math.max(BLOCK, this.alive.length * 2);
    const grow = <T extends Uint8Array | Int32Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.alive = grow(this.alive, (n) => new Uint8Array(n));
    this.kind = grow(this.kind, (n) => new Uint8Array(n));
    this.agent = grow(this.agent, (n) => new Int32Array(n));
    this.session = grow(this.session, (n) => new Int32Array(n));
    this.user = grow(this.user, (n) => new Int32Array(n));
    this.ts = grow(this.ts, (n) => new Float64Array(n));
    this.lastTs = grow(this.lastTs, (n) => new Float64Array(n));
  }

  private apply(row: ChangedRow): void {
    const key = `${row.source_type}:${row.source_id}`;
    let slot = this.slotOf.get(key);
    if (row.deleted === 1 || Number(row.dims) !== this.dims || !isStoredVector(row.vector, this.dims)) {
      // Tombstone (or a vector of another length: ignored, and any older one dropped).
      if (slot !== undefined && this.alive[slot] === 1) {
        this.alive[slot] = 0;
        this.live -= 1;
        // The vector itself is wiped too (an erased event's: nothing of it stays in memory).
        const block = this.blocks[Math.floor(slot / BLOCK)]!;
        block.codes.fill(0, (slot % BLOCK) * block.stride, ((slot % BLOCK) + 1) * block.stride);
        block.scales[slot % BLOCK] = 0;
      }
      return;
    }
    if (slot === undefined) {
      slot = this.count++;
      if (slot >= this.alive.length) this.grow();
      if (slot % BLOCK === 0 && this.blocks.length * BLOCK <= slot) this.blocks.push(new VectorBlock(this.dims, BLOCK));
      this.slotOf.set(key, slot);
      this.ids[slot] = row.source_id;
    }
    if (this.alive[slot] !== 1) this.live += 1;
    this.alive[slot] = 1;
    this.kind[slot] = row.source_type === 'event' ? EVENT : SESSION;
    this.agent[slot] = this.code(row.agent_id);
    this.session[slot] = this.code(row.session_id);
    this.user[slot] = this.code(row.user_id);
    this.ts[slot] = Number(row.ts);
    this.lastTs[slot] = Number(row.last_ts);
    const block = this.blocks[Math.floor(slot / BLOCK)]!;
    block.scales[slot % BLOCK] = readCodesInto(row.vector, this.dims, block.codes, (slot % BLOCK) * block.stride);
  }

  /** Order of equal scores: newer first, then events before sessions, then by id. */
  ranksBefore(a: number, b: number): boolean {
    const ta = this.ts[a]!;
    const tb = this.ts[b]!;
    if (ta !== tb) return ta > tb;
    if (this.kind[a] !== this.kind[b]) return this.kind[a]! < this.kind[b]!;
    return this.ids[a]! < this.ids[b]!;
  }

  slot(slot: number): Slot {
    return {
      sourceType: this.kind[slot] === EVENT ? 'event' : 'session',
      sourceId: this.ids[slot]!,
      sessionId: this.strings[this.session[slot]!]!,
      agentId: this.strings[this.agent[slot]!]!,
      ts: this.ts[slot]!,
      lastTs: this.lastTs[slot]!,
    };
  }

  /**
   * Calls `visit(slot, cosine, error)` for every live vector passing `filter`: `cosine` is the
   * scan's score (int8 vector against the i16 query, not clamped) and `error` bounds how far the
   * exact cosine of the Float32 vectors may lie from it (dot-kernel.ts scanError). `query` must
   * have this index's length.
   */
  scan(query: Float32Array, filter: ScanFilter, visit: (slot: number, cosine: number, error: number) => void): void {
    const dims = this.dims;
    if (query.length !== dims || this.count === 0) return;
    const { alive, kind, agent, session, user, ts } = this;
    const wantEvents = filter.events;
    const wantSessions = filter.sessions;
    // An unknown agent or user can match nothing (agent) or only unattributed sessions (user).
    const agentCode = filter.agentId === undefined ? -2 : (this.codes.get(filter.agentId) ?? -3);
    if (agentCode === -3) return;
    const excludedCode = filter.excludeAgentId === undefined ? -2 : (this.codes.get(filter.excludeAgentId) ?? -2);
    const userCode = filter.userId === undefined ? -2 : (this.codes.get(filter.userId) ?? -3);
    const from = filter.from ?? -Infinity;
    const to = filter.to ?? Infinity;
    let sessionCodes: Set<number> | null = null;
    if (filter.sessionIds) {
      sessionCodes = new Set();
      for (const id of filter.sessionIds) {
        const code = this.codes.get(id);
        if (code !== undefined) sessionCodes.add(code);
      }
      if (sessionCodes.size === 0) return;
    }
    const codes = quantiseQuery(query);
    for (let b = 0; b < this.blocks.length; b++) {
      const first = b * BLOCK;
      const last = Math.min(this.count, first + BLOCK);
      // Dot products of the whole block at once (WebAssembly SIMD), then the filters.
      const block = this.blocks[b]!;
      const sums = block.dots(codes, last - first);
      const scales = block.scales;
      for (let slot = first; slot < last; slot++) {
        if (alive[slot] !== 1) continue;
        if (kind[slot] === EVENT ? !wantEvents : !wantSessions) continue;
        if (agentCode !== -2 && agent[slot] !== agentCode) continue;
        if (agent[slot] === excludedCode) continue;
        const t = ts[slot]!;
        if (t < from || t > to) continue;
        if (userCode !== -2 && user[slot] !== -1 && user[slot] !== userCode) continue;
        if (sessionCodes !== null && !sessionCodes.has(session[slot]!)) continue;
        const scale = scales[slot - first]!;
        visit(slot, sums[slot - first]! * codes.scale * scale, scanError(codes, scale));
      }
    }
  }
}
