import { z } from 'zod';

export const eraseParams = z.object({ id: z.string().min(1).max(512).describe("The data subject's id, as events name it (SUBJECT_PATHS)") });

export const erasureReceiptSchema = z
  .object({
    erasureId: z.string(),
    subject: z.string().describe("HMAC-SHA256 of the subject's id under the service's subject key (SUBJECT_HASH_KEY): the raw id is not kept"),
    reason: z.string(),
    requestedBy: z.string().describe('Who asked: the API key, as the change log names it'),
    erasedAt: z.string(),
    eventCount: z.number().int(),
    sessionIds: z.array(z.string()),
    leaf: z
      .object({
        index: z.number().int().describe("The erasure leaf's index in the audit log (prove it included with GET /api/audit/proof/... of a checkpoint)"),
        body: z
          .string()
          .describe(
            'The leaf data: canonical JSON naming the subject, every erased event by id and chain hash, the reason, the requester, the time and the key',
          ),
        signature: z.string().describe("The audit key's Ed25519 signature over the UTF-8 bytes of body, base64"),
        keyId: z.string(),
        publicKey: z.string().describe('The raw Ed25519 public key, base64'),
      })
      .describe('Verify offline with `vigil verify erasure-receipt FILE --public-key KEY`'),
  })
  .meta({ id: 'ErasureReceipt' });
