import type { Kysely } from 'kysely';
import { z } from 'zod';
import { tablesOf } from './db.ts';
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
