// The signed erasure leaves a row check or trail verify needs (docs/guide/erasure.md, "The gate's
// side"): each checked against the log (the leaf at its index is the leaf of its body) and a key
// the log has recorded (its signature over the body), so an erasure row written around the service
// covers nothing, and an erased request or entry it names is reported as changed.
import { signedErasureLeaves } from '@vigil/platform';
import type { Kysely } from 'kysely';
import { GATE_LOG } from '../audit-log/index.ts';
import type { GateSchema } from '../schema.ts';
import { erasureOfMarkerText, parseGateErasureLeaf, type ErasureCover, type ErasureCovers } from '../stored-formats/index.ts';
import type { RequestRow } from './tables.ts';

/** The erasures a row and its trail name in erasure markers (none for a request never erased). */
export function erasuresNamed(row: RequestRow, trail: readonly { details: string | null }[]): string[] {
  const named = new Set<string>();
  for (const text of [row.params, ...trail.map((entry) => entry.details)]) {
    const erasure = erasureOfMarkerText(text);
    if (erasure !== null) named.add(erasure);
  }
  return [...named];
}

/** The covers of the named erasures whose leaves check out (signedErasureLeaves); one that does not is left out (what it names then verifies as changed). */
export async function erasureCovers(db: Kysely<GateSchema>, erasureIds: readonly string[]): Promise<ErasureCovers> {
  const leaves = await signedErasureLeaves(db, erasureIds, (body) => parseGateErasureLeaf(body, GATE_LOG));
  return new Map(leaves.map((leaf): [string, ErasureCover] => [leaf.erasureId, { entries: leaf.entries, requests: leaf.requests }]));
}
