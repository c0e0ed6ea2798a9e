import type { Transaction } from 'kysely';
import type { GateSchema } from '../schema.ts';
import type { ReceiptRedemptionRow } from './tables.ts';

/**
 * Inserts the request's redemption row unless one exists: true when this call inserted it. One
 * statement on both databases (ON CONFLICT DO NOTHING on the primary key), so two instances racing
 * for the same receipt cannot both succeed, whatever their isolation level.
 */
export async function claimRedemption(trx: Transaction<GateSchema>, row: ReceiptRedemptionRow): Promise<boolean> {
  const result = await trx
    .insertInto('receipt_redemptions')
    .values(row)
    .onConflict((conflict) => conflict.column('request_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}
