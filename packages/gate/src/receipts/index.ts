// Approval receipts (docs/guide/receipts.md): the signed proof of an approval that the agent
// redeems, once, for exactly the action and params that run. Requests issue them
// (stored-formats/receipt.ts is the recipe); this feature serves and redeems them.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import type { RequestService } from '../requests/index.ts';
import { registerReceiptRoutes } from './routes.ts';
import { insertIssuedRedemptions } from './store.ts';

export { receiptsMigrations } from './migrations.ts';
export type { ReceiptsTables } from './tables.ts';

export const receiptsFeature = (requests: RequestService): GateFeature =>
  defineFeature('receipts', ({ app, context }) => {
    registerReceiptRoutes(app, context, requests);
    requests.redeemAtIssueWith(insertIssuedRedemptions);
  });
