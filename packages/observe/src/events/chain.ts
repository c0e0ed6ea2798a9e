import { canonicalJson, sha256Hex } from '@vigil/platform';

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
  const text =
    `{"agentId":${JSON.stringify(fields.agentId)},"eventType":${JSON.stringify(fields.eventType)},"id":${JSON.stringify(fields.id)}` +
    `,"metadata":${metadata},"payload":${payload},"prevHash":${fields.prevHash === null ? 'null' : JSON.stringify(fields.prevHash)}` +
    `,"seq":${fields.seq},"sessionId":${JSON.stringify(fields.sessionId)},"severity":${JSON.stringify(fields.severity)}` +
    `,"timestamp":${JSON.stringify(fields.timestamp)},"v":${CHAIN_VERSION}}`;
  return sha256Hex(text);
}

/** A stored event as the chain sees it: payload and metadata in their stored canonical text. */
export interface StoredLink extends Omit<ChainFields, 'payload' | 'metadata'> {
  payloadJson: string;
  metadataJson: string;
  hash: string;
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
}

/**
 * Verifies links given in any order: sorted by seq they must be gapless from 0, each prevHash the
 * hash of the one before, each hash the recomputed hash of its own fields, and the last one the
 * session's recorded head (so deleting trailing events is caught too).
 */
export function verifyChain(links: readonly StoredLink[], head: ChainHead): ChainVerdict {
  const ordered = [...links].sort((a, b) => a.seq - b.seq);
  const broken = (seq: number, eventId: string | null, reason: string): ChainVerdict => ({
    valid: false,
    eventCount: ordered.length,
    brokenAt: { seq, eventId, reason },
  });
  let previous: string | null = null;
  for (let position = 0; position < ordered.length; position++) {
    const link = ordered[position]!;
    if (link.seq !== position) {
      return broken(position, link.id, `expected seq ${position} but found ${link.seq}: an event is missing`);
    }
    if (link.prevHash !== previous) {
      return broken(position, link.id, 'prevHash does not match the hash of the previous event');
    }
    // Stored text is hashed as stored: any byte changed in the row breaks the chain.
    if (chainHashOfCanonical(link, link.payloadJson, link.metadataJson) !== link.hash) {
      return broken(position, link.id, 'hash does not match the event content');
    }
    previous = link.hash;
  }
  if (head.lastSeq !== ordered.length - 1 || head.lastHash !== previous) {
    return broken(ordered.length, null, `the session head records seq ${head.lastSeq}: events are missing at the end of the chain`);
  }
  return { valid: true, eventCount: ordered.length, brokenAt: null };
}
