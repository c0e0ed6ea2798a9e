import { HEADS_LEAF, leafHash, parseHeadsLeaf, sha256, verifyBytes } from '@vigil/platform/audit-verify';
import { OBSERVE_PROFILE, type Checkpoint, type LogProfile } from './checkpoint.ts';
import { parseWriterLeaf } from '@vigil/observe/writer-leaf';
import { isHex64, isRecord, parseChainEvent, type ChainEvent, type Finding } from './input.ts';

/** Receives every present event the walk parsed, with all its chained fields (`vigil verify --deep`). */
export type WalkedEventSink = (fields: Record<string, unknown>) => void;
import { StreamingRoot } from './tree.ts';
import { erasedHash, erasureOfFields, uncoveredErasureMessage, type ErasedEvents } from './erasures.ts';

/** One leaf as GET /api/audit/leaves answers it. */
export interface WalkedLeaf {
  index: number;
  leafHash: string;
  sessionId: string;
  eventId: string | null;
  /** The event's canonical chain string; null when the event row is gone. */
  event: string | null;
  tombstone: { body: string; signature: string } | null;
  /** What the server stores the leaf as logging (its `kind` column); undefined when the server answers none. */
  kind?: string | null;
  /** On a change leaf (no scope, no tombstone): the change row's canonical text, null when the row is gone. */
  change?: string | null;
  /** The credential the server records as the event's writer (null: not recorded); undefined when the log records none (the gate's). */
  writtenBy?: string | null;
  /** On a heads leaf (the last leaf of a checkpoint's tree): its data. */
  heads?: string;
}

/** An event waiting for its batch's writer leaf (docs/audit.md#who-wrote-an-event). */
interface UnwrittenEvent {
  writtenBy: string | null;
  where: { sessionId: string; seq: number; eventId: string; leafIndex: number };
}

/** A session's recorded head, as GET /api/audit/heads answers it. */
export interface RecordedHead {
  headSeq: number;
  headHash: string | null;
}

/** The signed body of a retention tombstone leaf (docs/audit.md). */
interface Tombstone {
  sessionId: string;
  headSeq: number;
  headHash: string | null;
  eventCount: number;
  keyId: string;
}

interface SessionWalk {
  /** Event leaves of the session so far (present or not). */
  leafCount: number;
  lastLeafHash: string | null;
  /** The chain as linked so far: the next seq expected and the hash before it. */
  nextSeq: number;
  lastHash: string | null;
  /** The last linked event did not match its leaf: the next prevHash is not compared with its hash. */
  lastUnmatched: boolean;
  /** Events that came in leaf order before the seq they follow (leaves backfilled by timestamp). */
  waiting: Map<number, { event: ChainEvent; leafIndex: number; matched: boolean }>;
  /** Leaves whose event row is gone, not (yet) covered by a tombstone. */
  missing: { leafIndex: number; eventId: string | null }[];
  retained: number;
  tombstoned: boolean;
}

export interface WalkSummary {
  leaves: number;
  sessions: number;
  events: number;
  /** Leaves whose events a signed retention tombstone accounts for. */
  retained: number;
  /** The sessions those events belonged to. */
  retainedSessions: string[];
  tombstones: number;
  /** Leaves that log administrative changes (their rows checked against them). */
  changes: number;
  /** Events whose content a signed erasure leaf accounts for (replaced by a marker; hash and position kept). */
  erased: number;
}

/**
 * The whole-log audit, fed every leaf in index order (the state machine behind `vigil verify
 * --url`). It recomputes the root at the checkpoint's size, checks each present event's hash is
 * its leaf, rebuilds every session's chain from its events (seq 0… linked by prevHash), checks the
 * sessions' recorded heads against their chains, and accounts for leaves whose event is gone: a
 * later signed tombstone of the session that matches them (count and head) makes them retention;
 * otherwise they were deleted.
 */
export class LogWalk {
  readonly findings: Finding[] = [];
  private readonly root = new StreamingRoot();
  private readonly sessions = new Map<string, SessionWalk>();
  /** The signed checkpoints whose roots the walk recomputes (the latest, the saved one), by tree size. */
  private readonly unchecked: Map<number, Checkpoint>;
  private events = 0;
  private tombstones = 0;
  private changes = 0;
  private erased = 0;
  /** The events since the last writer leaf, by hash: the next writer leaf must name each one that records a writer, with that writer. */
  private unwritten = new Map<string, UnwrittenEvent>();
  private writerLeafSeen = false;

  /**
   * @param heads every session's recorded head, read before the walk (a head read later could name
   *   an event committed after the walk's last leaf)
   * @param keys the keys tombstones may be signed by, keyId → raw public key: the trusted ones (command.ts)
   * @param certificates the leaves of key certificates (key rotations), index → the key and its
   *   leaf hash: each must be that leaf of the log; they belong to no chain
   */
  constructor(
    checkpoints: readonly Checkpoint[],
    private readonly heads: ReadonlyMap<string, RecordedHead>,
    private readonly keys: ReadonlyMap<string, Buffer>,
    private readonly certificates: ReadonlyMap<number, { keyId: string; leafHash: string }> = new Map(),
    private readonly onEvent?: WalkedEventSink,
    /** The log walked: its items' scope member, its nouns in messages, whether it has tombstones. */
    private readonly n: LogProfile = OBSERVE_PROFILE,
    /** The erasures accepted before the walk (erasures.ts acceptErasures): their events, and their leaves the walk must find. */
    private readonly erasures: { erased: ErasedEvents; leaves: ReadonlyMap<number, { erasureId: string; leafHash: string }> } = {
      erased: new Map(),
      leaves: new Map(),
    },
  ) {
    this.unchecked = new Map(checkpoints.map((checkpoint) => [checkpoint.treeSize, checkpoint]));
  }

  get size(): number {
    return this.root.size;
  }

  add(leaf: WalkedLeaf): void {
    if (leaf.index !== this.root.size) {
      this.findings.push({
        check: 'leaf-order',
        leafIndex: this.root.size,
        message: `leaf ${this.root.size} is missing from the log: the next stored leaf is ${leaf.index}`,
      });
    }
    this.root.add(Buffer.from(leaf.leafHash, 'hex'));
    const checkpoint = this.unchecked.get(this.root.size);
    if (checkpoint !== undefined) this.checkRoot(checkpoint);
    this.checkKind(leaf);
    const certificate = this.certificates.get(leaf.index);
    if (certificate !== undefined) {
      if (certificate.leafHash !== leaf.leafHash)
        this.findings.push({
          check: 'key-certificate',
          leafIndex: leaf.index,
          message: `leaf ${leaf.index} is not the certificate of key ${certificate.keyId} the server lists for it`,
        });
      return;
    }
    const erasure = this.erasures.leaves.get(leaf.index);
    if (erasure !== undefined) {
      if (erasure.leafHash !== leaf.leafHash)
        this.findings.push({
          check: 'erasure',
          leafIndex: leaf.index,
          message: `leaf ${leaf.index} is not the erasure leaf of erasure ${erasure.erasureId} the server lists for it`,
        });
      return;
    }
    if (leaf.heads !== undefined && leaf.sessionId === null) this.addHeadsLeaf(leaf, leaf.heads);
    else if (leaf.tombstone !== null) this.addTombstone(leaf, leaf.tombstone);
    else if (leaf.change !== undefined && leaf.sessionId === null) this.addChangeLeaf(leaf, leaf.change);
    else if (leaf.sessionId === null) this.addWriterLeaf(leaf);
    else this.addEventLeaf(leaf);
  }

  /** The kind stored with a leaf must be what the leaf is found to cover (a certificate, a tombstone, a change row, a writer leaf, an item of a chain). */
  private checkKind(leaf: WalkedLeaf): void {
    if (leaf.kind === undefined) return;
    const covers = this.certificates.has(leaf.index)
      ? 'key-rotation'
      : this.erasures.leaves.has(leaf.index)
        ? 'erasure'
        : leaf.heads !== undefined && leaf.sessionId === null
          ? HEADS_LEAF
          : leaf.tombstone !== null
            ? 'tombstone'
            : leaf.change !== undefined && leaf.sessionId === null
              ? 'change'
              : leaf.sessionId === null
                ? 'writer'
                : this.n.item;
    if (leaf.kind !== covers)
      this.findings.push({
        check: 'leaf-kind',
        leafIndex: leaf.index,
        message: `leaf ${leaf.index} is stored as ${leaf.kind === null ? 'of no kind' : `kind ${leaf.kind}`}, but it is ${covers === this.n.item ? `an ${this.n.item} of ${this.n.scope} ${leaf.sessionId}` : `a ${covers} leaf`}`,
      });
  }

  /** A heads leaf: the data the server shows must be its leaf, and a heads leaf of this log naming its own index. */
  private addHeadsLeaf(leaf: WalkedLeaf, text: string): void {
    const parsed = parseHeadsLeaf(text, this.n.log);
    if (leafHash(Buffer.from(text, 'utf8')).toString('hex') !== leaf.leafHash || parsed?.treeSize !== leaf.index)
      this.findings.push({ check: 'heads', leafIndex: leaf.index, message: `leaf ${leaf.index} is not the heads leaf the server shows for it` });
  }

  /**
   * A leaf of no session (key certificates are handled before): a writer leaf, naming the writer
   * and the hashes of the events logged just before it. Each of them must record that writer, and
   * no event since the previous writer leaf may record a writer this one does not name.
   */
  private addWriterLeaf(leaf: WalkedLeaf): void {
    const at = { leafIndex: leaf.index };
    if (leaf.event === null) {
      this.findings.push({
        check: 'writer',
        ...at,
        message: `leaf ${leaf.index} belongs to no ${this.n.scope} and the server has no data for it (a writer leaf whose body was deleted?)`,
      });
      return;
    }
    const body = parseWriterLeaf(leaf.event, this.n.log);
    if (body === undefined || leafHash(Buffer.from(leaf.event, 'utf8')).toString('hex') !== leaf.leafHash) {
      this.findings.push({ check: 'writer', ...at, message: `leaf ${leaf.index} is not the writer leaf the server shows for it` });
      return;
    }
    this.writerLeafSeen = true;
    for (const hashed of body.events) {
      const event = this.unwritten.get(hashed);
      // An event named here but gone is reported where its own leaf is.
      if (event === undefined) continue;
      this.unwritten.delete(hashed);
      if (event.writtenBy !== body.writtenBy) {
        this.findings.push({
          check: 'writer',
          ...event.where,
          message: `${this.n.item} ${event.where.eventId} records writer ${event.writtenBy ?? '(none)'}, but its writer leaf ${leaf.index} names ${body.writtenBy}`,
        });
      }
    }
    this.reportUnwritten();
  }

  /** The events since the last writer leaf that record a writer no writer leaf named. */
  private reportUnwritten(): void {
    for (const event of this.unwritten.values()) {
      if (event.writtenBy === null) continue;
      this.findings.push({
        check: 'writer',
        ...event.where,
        message: `${this.n.item} ${event.where.eventId} records writer ${event.writtenBy}, but no writer leaf in the audit log names it`,
      });
    }
    this.unwritten.clear();
  }

  private checkRoot(checkpoint: Checkpoint): void {
    this.unchecked.delete(checkpoint.treeSize);
    if (this.root.root().toString('hex') !== checkpoint.rootHash) {
      this.findings.push({
        check: 'root',
        message: `the root of the log's first ${checkpoint.treeSize} leaves is not the signed checkpoint's: leaves were changed, removed or reordered`,
      });
    }
  }

  private session(sessionId: string): SessionWalk {
    let state = this.sessions.get(sessionId);
    if (state === undefined) {
      state = {
        leafCount: 0,
        lastLeafHash: null,
        nextSeq: 0,
        lastHash: null,
        lastUnmatched: false,
        waiting: new Map(),
        missing: [],
        retained: 0,
        tombstoned: false,
      };
      this.sessions.set(sessionId, state);
    }
    return state;
  }

  private addEventLeaf(leaf: WalkedLeaf): void {
    if (leaf.event === null) {
      const state = this.session(leaf.sessionId);
      state.leafCount += 1;
      state.lastLeafHash = leaf.leafHash;
      state.missing.push({ leafIndex: leaf.index, eventId: leaf.eventId });
      return;
    }
    const digest = sha256(leaf.event);
    const parsed = parseChainEvent(leaf.event, this.n.scopeField);
    if (parsed === undefined) {
      this.findings.push({
        check: this.n.item,
        sessionId: leaf.sessionId,
        leafIndex: leaf.index,
        message: `leaf ${leaf.index}: its ${this.n.item} is not a chained ${this.n.item} object (recipe v1)`,
      });
      return;
    }
    this.events += 1;
    this.onEvent?.(parsed.fields);
    // An erased event stands for the hash its signed erasure leaf lists, which must be its leaf's.
    const erased = erasedHash(parsed.fields, this.erasures.erased);
    if (erased !== undefined) this.erased += 1;
    const eventHash = erased ?? digest.toString('hex');
    const event: ChainEvent = { id: parsed.id, seq: parsed.seq, sessionId: parsed.sessionId, prevHash: parsed.prevHash, hash: eventHash };
    const where = { sessionId: event.sessionId, seq: event.seq, eventId: event.id, leafIndex: leaf.index };
    const matched = leafHash(Buffer.from(eventHash, 'hex')).toString('hex') === leaf.leafHash;
    if (!matched) {
      const marker = erasureOfFields(parsed.fields);
      this.findings.push({
        check: marker === null ? 'leaf' : 'erasure',
        ...where,
        message:
          marker === null
            ? `${this.n.item} ${event.id} (${this.n.scope} ${event.sessionId}, seq ${event.seq}) does not match its leaf ${leaf.index}: the ${this.n.item} was changed`
            : uncoveredErasureMessage(this.n.item, event.id, marker),
      });
    }
    // Events stored before writers were recorded (null, before any writer leaf) have none to check.
    if (leaf.writtenBy !== undefined && (leaf.writtenBy !== null || this.writerLeafSeen)) this.unwritten.set(event.hash, { writtenBy: leaf.writtenBy, where });
    const state = this.session(event.sessionId);
    state.leafCount += 1;
    state.lastLeafHash = leaf.leafHash;
    if (event.seq < state.nextSeq || state.waiting.has(event.seq)) {
      this.findings.push({ check: 'seq', ...where, message: `${this.n.item} ${event.id} repeats seq ${event.seq} of ${this.n.scope} ${event.sessionId}` });
    } else if (event.seq > state.nextSeq) {
      state.waiting.set(event.seq, { event, leafIndex: leaf.index, matched });
    } else {
      this.link(state, event, leaf.index, matched);
    }
  }

  private link(state: SessionWalk, event: ChainEvent, leafIndex: number, matched: boolean): void {
    for (
      let next: { event: ChainEvent; leafIndex: number; matched: boolean } | undefined = { event, leafIndex, matched };
      next !== undefined;
      next = state.waiting.get(state.nextSeq)
    ) {
      state.waiting.delete(next.event.seq);
      const { event: linked } = next;
      if (!state.lastUnmatched && linked.prevHash !== state.lastHash) {
        this.findings.push({
          check: 'prev-hash',
          sessionId: linked.sessionId,
          seq: linked.seq,
          eventId: linked.id,
          leafIndex: next.leafIndex,
          message: `${this.n.item} ${linked.id} (${this.n.scope} ${linked.sessionId}, seq ${linked.seq}): prevHash does not match the hash of the previous ${this.n.item}`,
        });
      }
      const head = this.heads.get(linked.sessionId);
      if (head !== undefined && head.headSeq === linked.seq && head.headHash !== linked.hash) {
        this.findings.push({
          check: 'head',
          sessionId: linked.sessionId,
          seq: linked.seq,
          eventId: linked.id,
          leafIndex: next.leafIndex,
          message: `${this.n.scope} ${linked.sessionId}: its recorded head (seq ${head.headSeq}) has another hash than the logged ${this.n.item} ${linked.id}`,
        });
      }
      state.nextSeq = linked.seq + 1;
      state.lastHash = linked.hash;
      state.lastUnmatched = !next.matched;
    }
  }

  /** A leaf logging an administrative change: its row must be stored, as it was when logged. */
  private addChangeLeaf(leaf: WalkedLeaf, change: string | null): void {
    this.changes += 1;
    const id = leaf.eventId ?? '(unknown id)';
    if (change === null) {
      this.findings.push({
        check: 'change-deleted',
        leafIndex: leaf.index,
        message: `leaf ${leaf.index}: change-log row ${id} is gone: a logged administrative change was deleted`,
      });
    } else if (leafHash(sha256(change)).toString('hex') !== leaf.leafHash) {
      this.findings.push({
        check: 'change',
        leafIndex: leaf.index,
        message: `change-log row ${id} does not match its leaf ${leaf.index}: the logged change was edited`,
      });
    }
  }

  private addTombstone(leaf: WalkedLeaf, tombstone: { body: string; signature: string }): void {
    this.tombstones += 1;
    const at = { sessionId: leaf.sessionId, leafIndex: leaf.index };
    const body = Buffer.from(tombstone.body, 'utf8');
    if (leafHash(body).toString('hex') !== leaf.leafHash) {
      this.findings.push({
        check: 'tombstone',
        ...at,
        message: `tombstone leaf ${leaf.index} (${this.n.scope} ${leaf.sessionId}) does not match its stored body`,
      });
      return;
    }
    const parsed = this.n.tombstones ? parseTombstone(tombstone.body, this.n.log) : undefined;
    if (parsed === undefined) {
      this.findings.push({ check: 'tombstone', ...at, message: `tombstone leaf ${leaf.index} is not a retention tombstone of this log` });
      return;
    }
    const key = this.keys.get(parsed.keyId);
    if (key === undefined || !verifyBytes(body, tombstone.signature, key)) {
      this.findings.push({
        check: 'tombstone',
        ...at,
        sessionId: parsed.sessionId,
        message:
          key === undefined
            ? `tombstone leaf ${leaf.index} (${this.n.scope} ${parsed.sessionId}) is signed by key ${parsed.keyId}, which this verification does not trust: it cannot account for deleted ${this.n.items}`
            : `tombstone leaf ${leaf.index} (${this.n.scope} ${parsed.sessionId}) is not signed by audit key ${parsed.keyId}`,
      });
      return;
    }
    const state = this.session(parsed.sessionId);
    const headLeaf = parsed.headHash === null ? null : leafHash(Buffer.from(parsed.headHash, 'hex')).toString('hex');
    if (parsed.eventCount !== state.leafCount || parsed.headSeq !== parsed.eventCount - 1 || headLeaf !== state.lastLeafHash) {
      this.findings.push({
        check: 'tombstone',
        ...at,
        sessionId: parsed.sessionId,
        message: `tombstone leaf ${leaf.index} records ${parsed.eventCount} ${this.n.items} of ${this.n.scope} ${parsed.sessionId} up to seq ${parsed.headSeq}; the log holds ${state.leafCount} before it, or another head`,
      });
      return;
    }
    state.retained += state.missing.length;
    state.missing = [];
    state.tombstoned = true;
  }

  /** After the last leaf: what is still unaccounted for. */
  finish(): WalkSummary {
    this.reportUnwritten();
    for (const [index, erasure] of this.erasures.leaves)
      if (index >= this.root.size)
        this.findings.push({ check: 'erasure', leafIndex: index, message: `erasure ${erasure.erasureId} names leaf ${index}, which the log does not have` });
    for (const [index, certificate] of this.certificates)
      if (index >= this.root.size)
        this.findings.push({
          check: 'key-certificate',
          leafIndex: index,
          message: `the certificate of key ${certificate.keyId} names leaf ${index}, which the log does not have`,
        });
    for (const checkpoint of this.unchecked.values()) {
      if (checkpoint.treeSize === 0) {
        if (checkpoint.rootHash !== new StreamingRoot().root().toString('hex'))
          this.findings.push({ check: 'root', message: 'the checkpoint of the empty log does not have the empty root' });
      } else {
        this.findings.push({ check: 'root', message: `the log has ${this.root.size} leaves, fewer than the ${checkpoint.treeSize} the checkpoint signs` });
      }
    }
    let retained = 0;
    for (const [sessionId, state] of this.sessions) {
      retained += state.retained;
      const head = this.heads.get(sessionId);
      if (head === undefined && !state.tombstoned && state.missing.length === state.leafCount && state.leafCount > 0) {
        const shown = state.missing
          .slice(0, 5)
          .map((m) => m.leafIndex)
          .join(', ');
        this.findings.push({
          check: `${this.n.scope}-deleted`,
          sessionId,
          leafIndex: state.missing[0]!.leafIndex,
          message: `${this.n.scope} ${sessionId} was deleted: its ${state.leafCount} logged ${this.n.items} are gone (leaves ${shown}${state.leafCount > 5 ? ', …' : ''}) and no retention tombstone records it`,
        });
        continue;
      }
      const seqs = this.missingSeqs(sessionId, state);
      state.missing.forEach((missing, i) => {
        const seq = seqs[i]!;
        this.findings.push({
          check: `${this.n.item}-deleted`,
          sessionId,
          seq,
          leafIndex: missing.leafIndex,
          ...(missing.eventId === null ? {} : { eventId: missing.eventId }),
          message: `leaf ${missing.leafIndex}: ${this.n.item} ${missing.eventId ?? '(unknown id)'} of ${this.n.scope} ${sessionId} (seq ${seq}) is gone and no retention tombstone records it`,
        });
      });
      if (state.waiting.size > 0 && state.missing.length === 0) {
        const next = Math.min(...state.waiting.keys());
        const waiting = state.waiting.get(next)!;
        this.findings.push({
          check: 'seq',
          sessionId,
          seq: state.nextSeq,
          eventId: waiting.event.id,
          leafIndex: waiting.leafIndex,
          message: `${this.n.scope} ${sessionId}: seq ${state.nextSeq} is not in the log; the next logged ${this.n.item}, ${waiting.event.id}, has seq ${next}`,
        });
      }
      if (head === undefined && !state.tombstoned && state.missing.length < state.leafCount) {
        this.findings.push({
          check: 'head',
          sessionId,
          message: `${this.n.scope} ${sessionId} has logged ${this.n.items} but no recorded head: its ${this.n.scope} row was deleted`,
        });
      }
    }
    for (const [sessionId, head] of this.heads) {
      const state = this.sessions.get(sessionId);
      // Deleted by a retention run that committed after the heads were read.
      if (state?.tombstoned === true) continue;
      const chainedTo = state === undefined ? -1 : state.nextSeq - 1;
      if (head.headSeq > chainedTo && !(state !== undefined && (state.missing.length > 0 || state.waiting.size > 0))) {
        this.findings.push({
          check: 'head',
          sessionId,
          seq: chainedTo + 1,
          message: `${this.n.scope} ${sessionId}: its recorded head is seq ${head.headSeq} but the log chains it only ${chainedTo < 0 ? `to no ${this.n.item}` : `to seq ${chainedTo}`}: ${this.n.items} after it are not in the log`,
        });
      }
    }
    const retainedSessions = [...this.sessions].filter(([, state]) => state.retained > 0).map(([sessionId]) => sessionId);
    return {
      leaves: this.root.size,
      sessions: this.sessions.size,
      events: this.events,
      retained,
      retainedSessions,
      tombstones: this.tombstones,
      changes: this.changes,
      erased: this.erased,
    };
  }

  /**
   * The seqs the session's gone events had: its chain stops at the first gap, so they fill, in leaf
   * order, the seqs from there that no later event holds, up to the recorded head and past it.
   */
  private missingSeqs(sessionId: string, state: SessionWalk): number[] {
    let upper = Math.max(state.nextSeq - 1, this.heads.get(sessionId)?.headSeq ?? -1);
    for (const seq of state.waiting.keys()) upper = Math.max(upper, seq);
    const seqs: number[] = [];
    for (let seq = state.nextSeq; seqs.length < state.missing.length; seq += 1) if (seq > upper || !state.waiting.has(seq)) seqs.push(seq);
    return seqs;
  }
}

function parseTombstone(text: string, log: string): Tombstone | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.v !== 1 || value.kind !== 'tombstone' || value.log !== log) return undefined;
  const { sessionId, headSeq, headHash, eventCount, keyId } = value;
  if (
    typeof sessionId !== 'string' ||
    typeof keyId !== 'string' ||
    !Number.isSafeInteger(headSeq) ||
    !Number.isSafeInteger(eventCount) ||
    (headHash !== null && !isHex64(headHash))
  ) {
    return undefined;
  }
  return { sessionId, headSeq: headSeq as number, headHash: headHash as string | null, eventCount: eventCount as number, keyId };
}
