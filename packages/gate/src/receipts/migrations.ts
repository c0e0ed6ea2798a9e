// The receipts feature's migration steps after the frozen history (src/migrations.ts collects every
// feature's in name order). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const receiptsMigrations: Record<string, MigrationStep> = {
  /** Redeemed approval receipts, one row per request (receipts/tables.ts): redemption is exactly-once across instances. */
  async '0015_receipt_redemptions'(db) {
    await db.schema
      .createTable('receipt_redemptions')
      .addColumn('request_id', 'text', (c) => c.primaryKey())
      .addColumn('nonce', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('redeemed_at', epochMsType, (c) => c.notNull())
      .addColumn('redeemed_by', 'text', (c) => c.notNull())
      .addColumn('redeemed_by_key_id', 'text')
      .execute();
  },
};
