// The signed erasure leaves a row check or trail verify needs (docs/guide/erasure.md, "The gate's
// side"): each checked against the log (the leaf at its index is the leaf of its body) and a key
// the log has recorded (its signature over the body), so an erasure row written around the service
// covers nothing, and an erased request or entry it names is reported as changed.
import { leafHash, verifyBytes } from '@vigil/platform';
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

/** The covers of the named erasures whose leaves check out; one that does not is left out (what it names then verifies as changed). */
export async function erasureCovers(db: Kysely<GateSchema>, erasureIds: readonly string[]): Promise<ErasureCovers> {
  const covers = new Map<string, ErasureCover>();
  if (erasureIds.length === 0) return covers;
  const rows = await db
    .selectFrom('audit_erasures as e')
    .innerJoin('audit_log_leaves as l', 'l.idx', 'e.leaf_idx')
    .select(['e.erasure_id', 'e.body', 'e.signature', 'l.leaf_hash'])
    .where('e.erasure_id', 'in', [...erasureIds])
    .execute();
  if (rows.length === 0) return covers;
  const keys = new Map(
    (await db.selectFrom('audit_keys').select(['key_id', 'public_key']).execute()).map((k) => [k.key_id, Buffer.from(k.public_key, 'base64')]),
  );
  for (const row of rows) {
    const leaf = parseGateErasureLeaf(row.body, GATE_LOG);
    if (leaf === undefined || leaf.erasureId !== row.erasure_id) continue;
    const body = Buffer.from(row.body, 'utf8');
    if (!leafHash(body).equals(row.leaf_hash)) continue;
    const key = keys.get(leaf.keyId);
    if (key === undefined || !verifyBytes(body, row.signature, key)) continue;
    covers.set(leaf.erasureId, { entries: leaf.entries, requests: leaf.requests });
  }
  return covers;
}
