import { canonicalJson, leafHash, sha256Hex } from '@vigil/platform';
import { markedErasure } from './erasure-leaf.ts';

/** The fields one chain link commits to. `timestamp` is the ISO 8601 UTC form with milliseconds. */
export interface ChainFields {
  id: string;
  seq: number;
  timestamp: string;
  sessionId: string;
  agentId: string;
  eventType: string;
  severity: string;
  payload: unknown;
  metadata: unknown;
  prevHash: string | null;
}

export const CHAIN_VERSION = 1;

/** hash = sha256_hex(RFC 8785 canonical JSON of {v:1, ...fields}); see docs/audit.md. */
export function chainHash(fields: ChainFields): string {
  return chainHashOfCanonical(fields, canonicalJson(fields.payload), canonicalJson(fields.metadata));
}

/**
 * The same hash from payload and metadata already in canonical form, so ingest canonicalises them
 * before taking the session lock. The envelope's members are written in RFC 8785 order (keys
 * sorted by UTF-16 code units); its strings and integers serialise exactly as JSON.stringify does.
 */
export function chainHashOfCanonical(fields: Omit<ChainFields, 'payload' | 'metadata'>, payload: string, metadata: string): string {
  return sha256Hex(chainText(fields, payload, metadata));
}

/**
 * The envelope's text before the id and after the seq, for the last fields they were written for:
 * consecutive links (a batch, a session read back) mostly share agent, type, session, severity
 * and timestamp, so these parts are not serialised and joined again for each link.
 */
let lastHead = { agentId: '', eventType: '', text: '{"agentId":"","eventType":"","id":' };
let lastTail = { sessionId: '', severity: '', timestamp: '', text: `,"sessionId":"","severity":"","timestamp":"","v":${CHAIN_VERSION}}` };

/** The canonical JSON text a link's hash is the SHA-256 of (what an export bundle carries). */
export function chainText(fields: Omit<ChainFields, 'payload' | 'metadata'>, payload: string, metadata: string): string {
  if (fields.agentId !== lastHead.agentId || fields.eventType !== lastHead.eventType) {
    const text = `{"agentId":${JSON.stringify(fields.agentId)},"eventType":${JSON.stringify(fields.eventType)},"id":`;
    lastHead = { agentId: fields.agentId, eventType: fields.eventType, text };
  }
  if (fields.sessionId !== lastTail.sessionId || fields.severity !== lastTail.severity || fields.timestamp !== lastTail.timestamp) {
    const text = `,"sessionId":${JSON.stringify(fields.sessionId)},"severity":${JSON.stringify(fields.severity)},"timestamp":${JSON.stringify(fields.timestamp)},"v":${CHAIN_VERSION}}`;
    lastTail = { sessionId: fields.sessionId, severity: fields.severity, timestamp: fields.timestamp, text };
  }
  return (
    `${lastHead.text}${JSON.stringify(fields.id)},"metadata":${metadata},"payload":${payload}` +
    `,"prevHash":${fields.prevHash === null ? 'null' : JSON.stringify(fields.prevHash)},"seq":${fields.seq}${lastTail.text}`
  );
}

/** A stored event as the chain sees it: payload and metadata in their stored canonical text. */
export interface StoredLink extends Omit<ChainFields, 'payload' | 'metadata'> {
  payloadJson: string;
  metadataJson: string;
  hash: string;
  /** The credential that wrote the event (events/writer.ts), outside the hash; null when not recorded. */
  writtenBy: string | null;
}

export interface ChainHead {
  lastSeq: number;
  lastHash: string | null;
}

export interface ChainBreak {
  seq: number;
  eventId: string | null;
  reason: string;
}

export interface ChainVerdict {
  valid: boolean;
  eventCount: number;
  brokenAt: ChainBreak | null;
  /** The erasures whose signed leaves cover events of the chain (their content replaced by a marker), when any. */
  erasures?: { erasureId: string; eventIds: string[] }[];
}

/**
 * What the signed erasure leaves of the audit log say was erased: by erasure id, each erased
 * event's id and the chain hash it had (events/erasure-covers.ts loads them, checked).
 */
export type ErasureCovers = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** The head of a session without events. */
export const EMPTY_HEAD: ChainHead = { lastSeq: -1, lastHash: null };

/**
 * Links whose hash was recomputed and matched, by hash, with every input of that hash as stored and
 * the audit-log leaf hash it implies: a memo of a pure function. A link read again with every
 * field identical (strings compared in full) matches for the same reason it did, so its SHA-256 is
 * not recomputed; a link with any byte changed misses the memo and is hashed as stored. Nothing
 * is trusted that the rows read now do not show: the memo only remembers what these exact bytes
 * hash to, so it may be shared by every service in the process. Bounded by the text it holds
 * (least recently used first out).
 */
class MatchedLinks {
  private readonly links = new Map<string, { link: StoredLink; leaf: string | undefined; size: number }>();
  private size = 0;

  constructor(private readonly maxChars: number) {}

  /**
   * Whether the link's stored hash is the hash of its stored content: null when not, else the
   * remembered link with exactly the same fields (the link itself when it was just hashed).
   */
  matching(link: StoredLink): StoredLink | null {
    const known = this.links.get(link.hash);
    if (known !== undefined && sameContent(known.link, link)) {
      this.links.delete(link.hash);
      this.links.set(link.hash, known);
      return known.link;
    }
    if (chainHashOfCanonical(link, link.payloadJson, link.metadataJson) !== link.hash) return null;
    this.remember(link);
    return link;
  }

  /** The audit-log leaf hash (hex) of a link's hash. */
  leafOf(hash: string): string {
    const known = this.links.get(hash);
    if (known?.leaf !== undefined) return known.leaf;
    const leaf = leafHash(Buffer.from(hash, 'hex')).toString('hex');
    if (known !== undefined) known.leaf = leaf;
    return leaf;
  }

  forget(hash: string): void {
    const known = this.links.get(hash);
    if (known === undefined) return;
    this.links.delete(hash);
    this.size -= known.size;
  }

  private remember(link: StoredLink): void {
    const size = link.payloadJson.length + link.metadataJson.length + link.id.length + 200;
    const replaced = this.links.get(link.hash);
    if (replaced !== undefined) this.size -= replaced.size;
    this.links.delete(link.hash);
    this.links.set(link.hash, { link, leaf: undefined, size });
    this.size += size;
    for (const [hash, entry] of this.links) {
      if (this.size <= this.maxChars) break;
      this.links.delete(hash);
      this.size -= entry.size;
    }
  }
}

/** Every input of a link's hash equal (the hash itself is the memo's key). */
function sameContent(a: StoredLink, b: StoredLink): boolean {
  return (
    a.id === b.id &&
    a.seq === b.seq &&
    a.timestamp === b.timestamp &&
    a.sessionId === b.sessionId &&
    a.agentId === b.agentId &&
    a.eventType === b.eventType &&
    a.severity === b.severity &&
    a.prevHash === b.prevHash &&
    a.payloadJson === b.payloadJson &&
    a.metadataJson === b.metadataJson &&
    a.writtenBy === b.writtenBy
  );
}

/**
 * 8 Mi characters of stored text (8 to 16 MiB; some 14,000 events of 600 characters: the sessions
 * people are looking at); the JSON a timeline keeps with a remembered link (store.ts
 * keptLinkJson) about doubles it. Small beside the service's memory budget (issue 22).
 */
const MATCHED_LINKS_MAX_CHARS = 8 * 1024 * 1024;
const matchedLinks = new MatchedLinks(MATCHED_LINKS_MAX_CHARS);

/** What the verifier keeps of a link once its own hash is checked. */
interface CheckedLink {
  id: string;
  seq: number;
  prevHash: string | null;
  hash: string;
  contentMatches: boolean;
  /** When the content does not match: the erasure its content's marker names (null: not a marker). */
  erasure: string | null;
  /** How the event stands in the audit log, when its leaf was read: none, or a leaf of another hash. */
  logged: 'unchecked' | 'matches' | 'missing' | 'differs';
}

/**
 * Verifies every stored event of a session against its recorded head, links fed in any order (a
 * stream in timeline order needs no sort in the database). Each link's own hash is recomputed as it
 * arrives; only ids and hashes are kept. `finish` then walks them in seq order (ties by id): seq
 * must run gapless from 0 without duplicates, each prevHash be the hash before it, each hash match
 * the event's content, and the chain end exactly at the recorded head: an event stored past the
 * head is not part of the recorded chain, and one missing before it leaves a gap or a short chain.
 *
 * `from` is a head already verified: the links are then the events after it (ingest checks what
 * was appended since a verdict's verification this way, under the session lock).
 */
export class ChainVerifier {
  private readonly links: CheckedLink[] = [];

  constructor(
    private readonly head: ChainHead,
    private readonly from: ChainHead = EMPTY_HEAD,
  ) {}

  /**
   * `leaf`: the audit-log leaf hash (hex) read with this link, null when the log has none for it
   * (an event not appended through ingest, however well its hashes link up); omitted, the log is
   * not checked. Returns the link to go on with: one verified before with exactly the same fields
   * when there is one (what is derived from it, such as its JSON, can stay with it), else `link`.
   */
  add(link: StoredLink, leaf?: string | null): StoredLink {
    // Stored text is hashed as stored: any byte changed in the row breaks the chain.
    const matching = matchedLinks.matching(link);
    let logged: CheckedLink['logged'] = 'unchecked';
    if (leaf !== undefined) logged = leaf === null ? 'missing' : leaf === matchedLinks.leafOf(link.hash) ? 'matches' : 'differs';
    const erasure = matching === null ? markedErasure(link.payloadJson, link.metadataJson) : null;
    this.links.push({ id: link.id, seq: link.seq, prevHash: link.prevHash, hash: link.hash, contentMatches: matching !== null, erasure, logged });
    return matching ?? link;
  }

  /** The erasures the markers of the links added so far name: the covers `finish` needs. */
  erasuresNamed(): string[] {
    return [...new Set(this.links.flatMap((link) => (link.erasure === null ? [] : [link.erasure])))];
  }

  /**
   * `covers`: the signed erasure leaves of the erasures named (erasuresNamed). An event whose
   * content is an erasure marker is valid when the leaf of the erasure it names lists it with its
   * hash; otherwise (no leaf, a leaf without it, or no covers given) it is tampering.
   */
  finish(covers: ErasureCovers = new Map()): ChainVerdict {
    const { head, from } = this;
    const erased = new Map<string, string[]>();
    const ordered = this.links.sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const eventCount = ordered.length;
    const broken = (seq: number, eventId: string | null, reason: string): ChainVerdict => ({ valid: false, eventCount, brokenAt: { seq, eventId, reason } });
    let previous: CheckedLink | null = null;
    let previousHash = from.lastHash;
    for (let index = 0; index < ordered.length; index++) {
      const link = ordered[index]!;
      const seq = from.lastSeq + 1 + index;
      if (link.seq !== seq) {
        if (previous !== null && link.seq === previous.seq) {
          return broken(seq, link.id, `event ${link.id} repeats seq ${link.seq} of event ${previous.id}: a duplicate is not linked into the chain`);
        }
        if (link.seq > seq) return broken(seq, link.id, `seq ${seq} is missing: the next stored event, ${link.id}, has seq ${link.seq}`);
        return broken(seq, link.id, `expected seq ${seq} but event ${link.id} has seq ${link.seq}`);
      }
      if (seq > head.lastSeq) {
        return broken(
          seq,
          link.id,
          `event ${link.id} (seq ${seq}) is stored past the session head (seq ${head.lastSeq}): it is not part of the recorded chain`,
        );
      }
      if (link.prevHash !== previousHash) return broken(seq, link.id, 'prevHash does not match the hash of the previous event');
      if (!link.contentMatches) {
        if (link.erasure === null) return broken(seq, link.id, 'hash does not match the event content');
        if (covers.get(link.erasure)?.get(link.id) !== link.hash) {
          return broken(
            seq,
            link.id,
            `event ${link.id}'s content was replaced by an erasure marker (erasure ${link.erasure}) that no signed erasure leaf of the audit log covers`,
          );
        }
        erased.set(link.erasure, [...(erased.get(link.erasure) ?? []), link.id]);
      }
      if (link.logged === 'missing') return broken(seq, link.id, `event ${link.id} has no leaf in the audit log: it was not appended through ingest`);
      if (link.logged === 'differs') return broken(seq, link.id, 'hash does not match the leaf the audit log recorded for the event');
      previous = link;
      previousHash = link.hash;
    }
    const lastSeq = from.lastSeq + ordered.length;
    if (lastSeq < head.lastSeq) {
      return broken(lastSeq + 1, null, `the session head records seq ${head.lastSeq}: events are missing at the end of the chain`);
    }
    if (previousHash !== head.lastHash) {
      return broken(lastSeq, previous?.id ?? null, `the session head records another hash for seq ${lastSeq}`);
    }
    if (erased.size === 0) return { valid: true, eventCount, brokenAt: null };
    return { valid: true, eventCount, brokenAt: null, erasures: [...erased].map(([erasureId, eventIds]) => ({ erasureId, eventIds })) };
  }
}

/** Drops the memo's links of these hashes (an erasure: the memo keeps no erased content). */
export function forgetMatchedLinks(hashes: Iterable<string>): void {
  for (const hash of hashes) matchedLinks.forget(hash);
}
