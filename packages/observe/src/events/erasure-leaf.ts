// An erasure's leaf data and the marker an erased event's content is replaced by
// (docs/guide/erasure.md): the one recipe the service writes and `vigil verify` reads
// (@vigil/observe/erasure-leaf), pure so that the verifier loads nothing else.
import { canonicalJson } from '@vigil/platform';

const ERASURE_LEAF_KIND = 'erasure';

/** What an erasure leaf records: the subject (keyed hash), every erased event (id and chain hash), why, who, when and the signing key. */
export interface ErasureLeaf {
  erasureId: string;
  log: string;
  subject: string;
  reason: string;
  requestedBy: string;
  timestamp: string;
  keyId: string;
  events: { id: string; hash: string }[];
}

/** The leaf's data: the UTF-8 bytes of `{erasureId, events, keyId, kind: "erasure", log, reason, requestedBy, subject, timestamp, v: 1}` in canonical JSON, events sorted by id. */
export function erasureLeafBody(leaf: ErasureLeaf): string {
  const events = [...leaf.events].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return canonicalJson({ ...leaf, events, kind: ERASURE_LEAF_KIND, v: 1 });
}

const HASH = /^[0-9a-f]{64}$/;

/** An erasure leaf's data parsed, or undefined when the text is not an erasure leaf of `log`. */
export function parseErasureLeaf(text: string, log: string): ErasureLeaf | undefined {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== 'object' || body.kind !== ERASURE_LEAF_KIND || body.log !== log || body.v !== 1) return undefined;
  const strings = ['erasureId', 'subject', 'reason', 'requestedBy', 'timestamp', 'keyId'] as const;
  if (!strings.every((key) => typeof body[key] === 'string')) return undefined;
  const events = body.events;
  if (
    !Array.isArray(events) ||
    !events.every(
      (e: unknown) =>
        e !== null && typeof e === 'object' && typeof (e as { id?: unknown }).id === 'string' && HASH.test(String((e as { hash?: unknown }).hash)),
    )
  )
    return undefined;
  const leaf = body as unknown as ErasureLeaf;
  return {
    erasureId: leaf.erasureId,
    log: leaf.log,
    subject: leaf.subject,
    reason: leaf.reason,
    requestedBy: leaf.requestedBy,
    timestamp: leaf.timestamp,
    keyId: leaf.keyId,
    events: leaf.events.map(({ id, hash }) => ({ id, hash })),
  };
}

/** The stored payload and metadata (canonical JSON) of an event erased by `erasureId`. */
export function erasureMarker(erasureId: string): { payload: string; metadata: string } {
  return { payload: canonicalJson({ erased: true, erasureId }), metadata: canonicalJson({ erasureId }) };
}

/** The erasure an event's stored payload names when it is exactly an erasure marker (with the matching metadata), else null. */
export function markedErasure(payloadJson: string, metadataJson: string): string | null {
  if (!payloadJson.startsWith('{"erased":true,"erasureId":')) return null;
  let erasureId: unknown;
  try {
    erasureId = (JSON.parse(payloadJson) as { erasureId?: unknown }).erasureId;
  } catch {
    return null;
  }
  if (typeof erasureId !== 'string') return null;
  const marker = erasureMarker(erasureId);
  return marker.payload === payloadJson && marker.metadata === metadataJson ? erasureId : null;
}
