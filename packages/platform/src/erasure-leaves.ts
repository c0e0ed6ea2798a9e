import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { AuditLogTables } from './audit-log.ts';
import { verifyBytes } from './audit-keys.ts';
import { tablesOf } from './db.ts';
import { leafHash } from './merkle.ts';
import { isoTimestampMs, periodInOrder } from './time.ts';

/** A signed erasure leaf as both services store it (`audit_erasures`: observe's erasure feature, the gate's). */
export interface AuditErasureRow {
  erasure_id: string;
  leaf_idx: number;
  subject_hash: string;
  body: string;
  signature: string;
  created_at: number;
}

/** DELETE /api/subjects/:id's body on either service: the reason the signed erasure leaf records. */
export const eraseBodySchema = z.strictObject({
  reason: z.string().trim().min(1).max(2000).describe('Why the subject is erased (e.g. "GDPR Art. 17 request 2026-0142"); recorded in the signed leaf'),
});

/** GET /api/erasures/:id's params on either service. */
export const erasureParams = z.object({ id: z.string().min(1).max(200) });

/** GET /api/audit/erasures's query: `from` and `to` (ISO 8601, inclusive, optional) keep the erasures made in that period. */
export const erasureLeavesQuerySchema = periodInOrder(z.object({ from: isoTimestampMs.optional(), to: isoTimestampMs.optional() }));

/** GET /api/audit/erasures's answer: each erasure leaf's index, data and the log key's signature. */
export const erasureLeavesSchema = z.object({
  erasures: z.array(z.object({ erasureId: z.string(), leafIndex: z.number().int(), body: z.string(), signature: z.string() })),
});

/** The erasure leaves made in the period, in log order (an index on the erasure time serves `from`/`to`). */
export async function listErasureLeaves<Schema extends { audit_erasures: AuditErasureRow }>(
  db: Kysely<Schema>,
  period: { from?: number; to?: number },
): Promise<z.infer<typeof erasureLeavesSchema>> {
  let query = tablesOf<{ audit_erasures: AuditErasureRow }, Schema>(db).selectFrom('audit_erasures').select(['erasure_id', 'leaf_idx', 'body', 'signature']);
  if (period.from !== undefined) query = query.where('created_at', '>=', period.from);
  if (period.to !== undefined) query = query.where('created_at', '<=', period.to);
  const rows = await query.orderBy('leaf_idx').execute();
  return { erasures: rows.map((row) => ({ erasureId: row.erasure_id, leafIndex: Number(row.leaf_idx), body: row.body, signature: row.signature })) };
}

/**
 * The named erasures whose signed leaves check out, each parsed by `parse` (a service's leaf
 * format): the leaf logged at the row's index is the leaf of its body, and a key the log has
 * recorded signed that body. One that does not is left out, so what it names verifies as changed:
 * an erasure row written around the service covers nothing (docs/guide/erasure.md).
 */
export async function signedErasureLeaves<Schema extends Pick<AuditLogTables, 'audit_log_leaves' | 'audit_keys'> & { audit_erasures: AuditErasureRow }, Leaf>(
  db: Kysely<Schema>,
  erasureIds: readonly string[],
  parse: (body: string) => (Leaf & { erasureId: string; keyId: string }) | undefined,
): Promise<Leaf[]> {
  if (erasureIds.length === 0) return [];
  const view = tablesOf<Pick<AuditLogTables, 'audit_log_leaves' | 'audit_keys'> & { audit_erasures: AuditErasureRow }, Schema>(db);
  const rows = await view
    .selectFrom('audit_erasures as e')
    .innerJoin('audit_log_leaves as l', 'l.idx', 'e.leaf_idx')
    .select(['e.erasure_id', 'e.body', 'e.signature', 'l.leaf_hash'])
    .where('e.erasure_id', 'in', [...erasureIds])
    .execute();
  if (rows.length === 0) return [];
  const keys = new Map(
    (await view.selectFrom('audit_keys').select(['key_id', 'public_key']).execute()).map((k) => [k.key_id, Buffer.from(k.public_key, 'base64')]),
  );
  const checked: Leaf[] = [];
  for (const row of rows) {
    const leaf = parse(row.body);
    if (leaf === undefined || leaf.erasureId !== row.erasure_id) continue;
    const body = Buffer.from(row.body, 'utf8');
    if (!leafHash(body).equals(row.leaf_hash)) continue;
    const key = keys.get(leaf.keyId);
    if (key !== undefined && verifyBytes(body, row.signature, key)) checked.push(leaf);
  }
  return checked;
}
