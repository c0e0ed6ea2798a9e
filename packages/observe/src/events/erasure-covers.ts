// The signed erasure leaves a verification needs (docs/guide/erasure.md): each checked against the
// log (the leaf at its index is the leaf of its body) and a key the log has recorded (its signature
// over the body), so an erasure row written around the service covers nothing.
import { signedErasureLeaves } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import type { ErasureCovers } from './chain.ts';
import { parseErasureLeaf } from './erasure-leaf.ts';

/** The covers of the named erasures whose leaves check out (signedErasureLeaves); one that does not is left out (its events then verify as tampered). */
export async function erasureCovers(db: Kysely<ObserveSchema>, log: string, erasureIds: readonly string[]): Promise<ErasureCovers> {
  const leaves = await signedErasureLeaves(db, erasureIds, (body) => parseErasureLeaf(body, log));
  return new Map(leaves.map((leaf) => [leaf.erasureId, new Map(leaf.events.map((event) => [event.id, event.hash]))]));
}
