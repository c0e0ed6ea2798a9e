// The signed erasure leaves a verification needs (docs/guide/erasure.md): each checked against the
// log (the leaf at its index is the leaf of its body) and a key the log has recorded (its signature
// over the body), so an erasure row written around the service covers nothing.
import { leafHash, verifyBytes } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import type { ErasureCovers } from './chain.ts';
import { parseErasureLeaf } from './erasure-leaf.ts';

/** The covers of the named erasures whose leaves check out; an erasure that does not is left out (its events then verify as tampered). */
export async function erasureCovers(db: Kysely<ObserveSchema>, log: string, erasureIds: readonly string[]): Promise<ErasureCovers> {
  const covers = new Map<string, Map<string, string>>();
  if (erasureIds.length === 0) return covers;
  const rows = await db
    .selectFrom('audit_erasures as e')
    .innerJoin('audit_log_leaves as l', 'l.idx', 'e.leaf_idx')
    .select(['e.erasure_id', 'e.body', 'e.signature', 'l.leaf_hash'])
    .where('e.erasure_id', 'in', [...erasureIds])
    .execute();
  const keys = new Map(
    (await db.selectFrom('audit_keys').select(['key_id', 'public_key']).execute()).map((k) => [k.key_id, Buffer.from(k.public_key, 'base64')]),
  );
  for (const row of rows) {
    const leaf = parseErasureLeaf(row.body, log);
    if (leaf === undefined || leaf.erasureId !== row.erasure_id) continue;
    const body = Buffer.from(row.body, 'utf8');
    if (!leafHash(body).equals(row.leaf_hash)) continue;
    const key = keys.get(leaf.keyId);
    if (key === undefined || !verifyBytes(body, row.signature, key)) continue;
    covers.set(leaf.erasureId, new Map(leaf.events.map((event) => [event.id, event.hash])));
  }
  return covers;
}
