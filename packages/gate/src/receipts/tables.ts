// The tables receipts/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/**
 * A redeemed receipt: one row per request, its primary key, so that of any number of concurrent
 * redemptions, on any number of gate instances, exactly one inserts it (receipts/store.ts).
 */
export interface ReceiptRedemptionRow {
  request_id: string;
  /** The receipt's nonce and signing key, as redeemed. */
  nonce: string;
  key_id: string;
  redeemed_at: number;
  /** The credential that redeemed it: its actor and the API key behind it. */
  redeemed_by: string;
  redeemed_by_key_id: string | null;
}

export interface ReceiptsTables {
  receipt_redemptions: ReceiptRedemptionRow;
}
