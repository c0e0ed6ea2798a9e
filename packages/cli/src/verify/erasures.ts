// Erased events (docs/guide/erasure.md): an event whose stored content is an erasure marker is held
// to the signed erasure leaf it names — the leaf must be signed by a trusted audit key and list the
// event with its chain hash; that hash then stands for the event (its leaf, the next prevHash).
import { canonicalJson, leafHash, verifyBytes } from '@vigil/platform/audit-verify';
import { erasureOfMarker, parseGateErasureLeaf } from '@vigil/gate/request-evidence';
import { markedErasure, parseErasureLeaf } from '@vigil/observe/erasure-leaf';
import type { Finding } from './input.ts';

/** An erasure leaf as the server or a bundle carries it. */
export interface CarriedErasure {
  leafIndex: number;
  body: string;
  signature: string;
}

/** The events signed erasure leaves account for: event id → its chain hash and the erasure. */
export type ErasedEvents = Map<string, { hash: string; erasureId: string }>;

/** The gate's requests signed erasure leaves account for: request id → the requestHash its created entry committed to, and the erasure. */
export type ErasedRequests = Map<string, { requestHash: string; erasureId: string }>;

/**
 * The erasures whose leaves parse as erasure leaves of `log` and are signed by one of `keys`
 * (keyId → raw key): their events, and each accepted leaf's index → its leaf hash (the walk or the
 * bundle must find that leaf in the log). Any other is a finding.
 */
export function acceptErasures(
  log: string,
  carried: readonly CarriedErasure[],
  keys: ReadonlyMap<string, Buffer> | ((keyId: string) => Buffer | undefined),
): { erased: ErasedEvents; requests: ErasedRequests; leaves: Map<number, { erasureId: string; leafHash: string }>; findings: Finding[] } {
  const erased: ErasedEvents = new Map();
  const requests: ErasedRequests = new Map();
  const leaves = new Map<number, { erasureId: string; leafHash: string }>();
  const findings: Finding[] = [];
  const keyOf = typeof keys === 'function' ? keys : (keyId: string) => keys.get(keyId);
  for (const erasure of carried) {
    const leaf = parseErasureLeaf(erasure.body, log);
    const at = { leafIndex: erasure.leafIndex };
    if (leaf === undefined) {
      findings.push({ check: 'erasure', ...at, message: `leaf ${erasure.leafIndex} is listed as an erasure but its data is not an erasure leaf of ${log}` });
      continue;
    }
    const key = keyOf(leaf.keyId);
    const body = Buffer.from(erasure.body, 'utf8');
    if (key === undefined || !verifyBytes(body, erasure.signature, key)) {
      findings.push({
        check: 'erasure',
        ...at,
        message:
          key === undefined
            ? `erasure ${leaf.erasureId} (leaf ${erasure.leafIndex}) is signed by key ${leaf.keyId}, which this verification does not trust: it accounts for no erased event`
            : `erasure ${leaf.erasureId} (leaf ${erasure.leafIndex}) is not signed by audit key ${leaf.keyId}`,
      });
      continue;
    }
    leaves.set(erasure.leafIndex, { erasureId: leaf.erasureId, leafHash: leafHash(body).toString('hex') });
    for (const event of leaf.events) erased.set(event.id, { hash: event.hash, erasureId: leaf.erasureId });
    // The gate's leaves list the erased requests too (their params and context are the marker).
    for (const [id, requestHash] of parseGateErasureLeaf(erasure.body, log)?.requests ?? []) requests.set(id, { requestHash, erasureId: leaf.erasureId });
  }
  return { erased, requests, leaves, findings };
}

/** The erasure an event's (or a gate audit entry's: its details) chained fields are the marker of, or null. */
export function erasureOfFields(fields: Record<string, unknown>): string | null {
  if (fields.payload === undefined || fields.metadata === undefined) return fields.details === undefined ? null : erasureOfMarker(fields.details);
  return markedErasure(canonicalJson(fields.payload), canonicalJson(fields.metadata));
}

/** The chain hash an erased event stands for: the one the accepted leaf of the erasure its marker names lists for it; undefined when none does. */
export function erasedHash(fields: Record<string, unknown>, erased: ErasedEvents): string | undefined {
  const erasureId = erasureOfFields(fields);
  if (erasureId === null) return undefined;
  const cover = erased.get(fields.id as string);
  return cover !== undefined && cover.erasureId === erasureId ? cover.hash : undefined;
}

/** The finding of an erasure marker no accepted leaf covers. */
export function uncoveredErasureMessage(item: string, id: string, erasureId: string): string {
  return `${item} ${id}'s content was replaced by an erasure marker (erasure ${erasureId}) that no signed erasure leaf covers: it was changed`;
}
