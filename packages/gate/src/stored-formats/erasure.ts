// How an erasure rewrites what the gate stores, and its signed leaf (docs/guide/erasure.md, "The
// gate's side"): the marker that replaces erased content and the leaf that vouches for it. Written by
// the erasure, read by the row check, the trail verify and `vigil verify`.
import { canonicalJson } from '@vigil/platform/audit-verify';

/**
 * What an erased request's params, context and execution result, and its erased entries' details,
 * become (docs/guide/erasure.md, "The gate's side"): `{"erased":true,"erasureId":"…"}`.
 */
export function erasureMarkerText(erasureId: string): string {
  return canonicalJson({ erased: true, erasureId });
}

/** The decision reason an erased decision's row holds (its entry's details are the marker). */
export function erasedReasonText(erasureId: string): string {
  return `[erased by ${erasureId}]`;
}

/** The erasure a parsed value is exactly the marker of, else null. */
export function erasureOfMarker(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const { erased, erasureId, ...rest } = value as Record<string, unknown>;
  return erased === true && typeof erasureId === 'string' && Object.keys(rest).length === 0 ? erasureId : null;
}

/** The erasure a stored JSON text (params, context, details) is exactly the marker of, else null (parsed only when it starts like one). */
export function erasureOfMarkerText(text: string | null): string | null {
  if (text === null || !text.startsWith('{"erased":true,')) return null;
  try {
    return erasureOfMarker(JSON.parse(text));
  } catch {
    return null;
  }
}

/** What one signed erasure leaf of the gate vouches for: each erased entry's chain hash and each erased request's requestHash, by id. */
export interface ErasureCover {
  entries: ReadonlyMap<string, string>;
  requests: ReadonlyMap<string, string>;
}

/** The covers of the erasures whose signed leaves checked out, by erasure id. */
export type ErasureCovers = ReadonlyMap<string, ErasureCover>;

/** What a gate erasure leaf records: the subject (keyed hash), each erased entry (id and chain hash), each erased request (id and requestHash), why, who, when and the key. */
export interface GateErasureLeaf {
  erasureId: string;
  log: string;
  subject: string;
  reason: string;
  requestedBy: string;
  timestamp: string;
  keyId: string;
  events: { id: string; hash: string }[];
  requests: { id: string; requestHash: string }[];
}

const byId = <T extends { id: string }>(items: readonly T[]): T[] => [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/**
 * The leaf's data: canonical JSON of `{erasureId, events, keyId, kind: "erasure", log, reason,
 * requestedBy, requests, subject, timestamp, v: 1}` (lists sorted by id) — observe's erasure leaf
 * with `events` the erased audit entries and `requests` the erased requests.
 */
export function gateErasureLeafBody(leaf: GateErasureLeaf): string {
  return canonicalJson({ ...leaf, events: byId(leaf.events), requests: byId(leaf.requests), kind: 'erasure', v: 1 });
}

const HASH = /^[0-9a-f]{64}$/;

/** An erasure leaf's erased entries and requests, when `text` is a gate erasure leaf of `log` (else undefined). */
export function parseGateErasureLeaf(text: string, log: string): (ErasureCover & { erasureId: string; keyId: string }) | undefined {
  let body: Partial<Record<keyof GateErasureLeaf | 'kind' | 'v', unknown>>;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== 'object' || body.kind !== 'erasure' || body.log !== log || body.v !== 1) return undefined;
  if (typeof body.erasureId !== 'string' || typeof body.keyId !== 'string' || !Array.isArray(body.events) || !Array.isArray(body.requests)) return undefined;
  const pairs = (items: unknown[], key: 'hash' | 'requestHash'): [string, string][] | undefined => {
    const out: [string, string][] = [];
    for (const item of items) {
      const { id, [key]: value } = (item ?? {}) as Record<string, unknown>;
      if (typeof id !== 'string' || typeof value !== 'string' || !HASH.test(value)) return undefined;
      out.push([id, value]);
    }
    return out;
  };
  const events = pairs(body.events, 'hash');
  const requests = pairs(body.requests, 'requestHash');
  if (events === undefined || requests === undefined) return undefined;
  return { erasureId: body.erasureId, keyId: body.keyId, entries: new Map(events), requests: new Map(requests) };
}
