import { canonicalJson, parseSigningKey, routeOptions, sha256Hex, toIso, type SigningKey, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { auditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import type { RequestService } from '../requests/index.ts';
import { receiptRedemptionSchema, receiptSchema, receiptSignatureValid, type Receipt } from '../stored-formats/index.ts';
import { claimRedemption } from './store.ts';

const jsonObject = z.record(z.string(), z.unknown());

/**
 * The keys a receipt the gate issued can be signed with: the audit key, and the key it replaced
 * (AUDIT_PREVIOUS_SIGNING_KEY), so a receipt issued just before a rotation is still redeemed. Keys
 * merely listed in the database are not trusted: anyone who writes it could add one.
 */
function trustedKeys(ctx: GateContext): Map<string, Buffer> {
  const keys: SigningKey[] = [ctx.auditLog.key];
  const previous = ctx.config.audit.previousSigningKey;
  if (previous !== undefined) keys.push(parseSigningKey(previous));
  return new Map(keys.map((key) => [key.keyId, key.publicKey]));
}

export function registerReceiptRoutes(app: ZodApp, ctx: GateContext, requests: RequestService): void {
  const keys = trustedKeys(ctx);

  app.get(
    '/api/requests/:id/receipt',
    routeOptions('request:read', {
      operationId: 'getRequestReceipt',
      summary: 'The approval receipt of an approved request',
      description:
        "Ed25519 over the RFC 8785 canonical JSON of the receipt's other fields, with the audit log's signing key (`keyId`; GET /api/audit/public-key). " +
        'The same receipt on every read until the key rotates; 404 when the request is not approved (docs/guide/receipts.md).',
      tags: ['receipts'],
      params: z.object({ id: z.string().min(1).max(100) }),
      response: { 200: receiptSchema },
    }),
    async (request) => {
      const row = await requests.get(request.params.id);
      if (!row) throw gateError('requestNotFound');
      const receipt = await requests.receipt(row);
      if (!receipt) throw gateError('receiptNotIssued');
      return receipt;
    },
  );

  app.post(
    '/api/receipts/redeem',
    routeOptions('request:create', {
      operationId: 'redeemReceipt',
      errorStatuses: [404, 409, 410, 422],
      summary: 'Redeem an approval receipt for the action and params about to run (once)',
      description:
        'Checks the signature (401 when it is not one of the gate’s keys’), the expiry (410), that `action` and the digest of `params` are the ' +
        "receipt's (422), then records the redemption in the request's audit chain, naming the redeeming key: 200 the first time, 409 after " +
        '(also after a redemption at issue: POST /api/requests with `redeem: true`). ' +
        'A malformed receipt is a 400.',
      tags: ['receipts'],
      body: z.object({ receipt: z.unknown(), action: z.string().min(1).max(200), params: jsonObject }).strict(),
      response: { 200: receiptRedemptionSchema },
    }),
    async (request) => {
      const parsed = receiptSchema.safeParse(request.body.receipt);
      if (!parsed.success) {
        throw gateError(
          'receiptMalformed',
          undefined,
          parsed.error.issues.map((issue) => ({ path: ['receipt', ...issue.path].join('.'), message: issue.message })),
        );
      }
      const receipt = parsed.data as Receipt;
      const key = keys.get(receipt.keyId);
      if (key === undefined || !receiptSignatureValid(receipt, key)) throw gateError('receiptSignature');
      const now = ctx.clock.now();
      if (Date.parse(receipt.expiresAt) <= now) throw gateError('receiptExpired');
      const { action, params } = request.body;
      if (action !== receipt.action) throw gateError('receiptMismatch', `The receipt approves "${receipt.action}", not "${action}"`);
      if (sha256Hex(canonicalJson(params)) !== receipt.argsDigest) throw gateError('receiptMismatch', 'The params differ from the ones approved (argsDigest)');
      const by = auditActor(request);
      const outcome = await requests.recordRedemption(receipt.requestId, by, { nonce: receipt.nonce, receiptKeyId: receipt.keyId }, (trx, row, at) =>
        claimRedemption(trx, {
          request_id: row.id,
          nonce: receipt.nonce,
          key_id: receipt.keyId,
          redeemed_at: at,
          redeemed_by: by.actor,
          redeemed_by_key_id: by.keyId,
        }),
      );
      if (!outcome) throw gateError('requestNotFound');
      if (!outcome.first) throw gateError('receiptRedeemed');
      return { requestId: outcome.row.id, action: outcome.row.action, redeemedAt: toIso(now), redeemedBy: by.actor, keyId: by.keyId };
    },
  );
}
