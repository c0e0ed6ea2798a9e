import type { Transaction } from 'kysely';
import type { IssuedRedemption } from '../requests/index.ts';
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

/** The rows of receipts redeemed at issue (RequestService.redeemAtIssueWith): their requests are new, so nothing can conflict. */
export async function insertIssuedRedemptions(trx: Transaction<GateSchema>, redemptions: readonly IssuedRedemption[]): Promise<void> {
  await trx
    .insertInto('receipt_redemptions')
    .values(
      redemptions.map((redemption) => ({
        request_id: redemption.requestId,
        nonce: redemption.nonce,
        key_id: redemption.keyId,
        redeemed_at: redemption.at,
        redeemed_by: redemption.by.actor,
        redeemed_by_key_id: redemption.by.keyId,
      })),
    )
    .execute();
}
