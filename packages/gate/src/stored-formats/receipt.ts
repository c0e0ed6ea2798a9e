// The approval receipt, version 1 (docs/guide/receipts.md): what the gate signs when it allows an
// action. Receipts are verified offline (the SDK, `vigil verify receipt`) with this exact recipe,
// so it never changes: another recipe would be a version 2 beside it. Feature-free, importing only
// the platform, so the requests feature (which issues receipts) and the receipts feature (which
// redeems them) share the one recipe.
import { canonicalJson, sha256Hex, signBytes, verifyBytes, type SigningKey } from '@vigil/platform';
import { z } from 'zod';

export const RECEIPT_VERSION = 1;

/** How long after the decision a receipt can be redeemed: the approval is for running the action now, not later. */
export const RECEIPT_TTL_MS = 15 * 60 * 1000;

/** Who allowed the action: the API key behind the decider's credential, or (no key: a policy, a chat user) the actor the request records. */
export type ReceiptDecider = { keyId: string; name: string } | { user: string };

export interface UnsignedReceipt {
  v: 1;
  requestId: string;
  action: string;
  /** Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the request's params. */
  argsDigest: string;
  decision: 'approved';
  decidedBy: ReceiptDecider;
  /** The policy whose rule routed or decided the request; null when no rule matched. */
  policyId: string | null;
  issuedAt: string;
  expiresAt: string;
  nonce: string;
  /** The audit (checkpoint) signing key's id: hex of the first 16 bytes of SHA-256 of its raw public key. */
  keyId: string;
}

export interface Receipt extends UnsignedReceipt {
  /** base64url (no padding) Ed25519 signature over receiptMessage(every other field). */
  signature: string;
}

const hex = (length: number) => z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`));
const isoMs = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

export const receiptSchema = z
  .object({
    v: z.literal(RECEIPT_VERSION),
    requestId: z.string().min(1).max(100),
    action: z.string().min(1).max(200),
    argsDigest: hex(64).describe('Hex SHA-256 of the RFC 8785 canonical JSON of the params'),
    decision: z.literal('approved'),
    decidedBy: z.union([z.object({ keyId: z.string().max(100), name: z.string().max(200) }).strict(), z.object({ user: z.string().max(300) }).strict()]),
    policyId: z.string().max(100).nullable(),
    issuedAt: isoMs,
    expiresAt: isoMs,
    nonce: hex(32),
    keyId: hex(32),
    signature: z
      .string()
      .regex(/^[A-Za-z0-9_-]{86}$/)
      .describe('base64url Ed25519 signature over the RFC 8785 canonical JSON of every other field'),
  })
  .strict()
  .meta({ id: 'ApprovalReceipt', description: 'An approval receipt (docs/guide/receipts.md)' });

/** A redemption, as POST /api/receipts/redeem answers it and POST /api/requests (`redeem: true`) carries it. */
export const receiptRedemptionSchema = z
  .object({
    requestId: z.string(),
    action: z.string(),
    redeemedAt: z.string(),
    redeemedBy: z.string().describe('The actor of the credential that redeemed it'),
    keyId: z.string().nullable().describe('The API key behind that credential'),
  })
  .meta({ id: 'ReceiptRedemption' });

/** A receipt's nonce: the start of its approving audit entry's chain hash, unique per decision and fixed by the chain. */
export function receiptNonce(approvingEntryHash: string): string {
  return approvingEntryHash.slice(0, 32);
}

/** The digest a receipt binds the params with. */
export function argsDigest(params: unknown): string {
  return sha256Hex(canonicalJson(params));
}

/** The bytes a receipt's signature covers: the canonical JSON of every field but `signature`. */
export function receiptMessage(receipt: UnsignedReceipt): Buffer {
  const { v, requestId, action, argsDigest: digest, decision, decidedBy, policyId, issuedAt, expiresAt, nonce, keyId } = receipt;
  return Buffer.from(canonicalJson({ v, requestId, action, argsDigest: digest, decision, decidedBy, policyId, issuedAt, expiresAt, nonce, keyId }), 'utf8');
}

export function signReceipt(key: SigningKey, unsigned: Omit<UnsignedReceipt, 'keyId'>): Receipt {
  const body: UnsignedReceipt = { ...unsigned, keyId: key.keyId };
  // signBytes answers standard base64; the receipt spells its signature base64url (it travels in URLs and headers).
  const signature = Buffer.from(signBytes(key, receiptMessage(body)), 'base64').toString('base64url');
  return { ...body, signature };
}

/** Whether the receipt's signature is the raw Ed25519 public key's (the caller matched keyId to the key). */
export function receiptSignatureValid(receipt: Receipt, rawPublic: Buffer): boolean {
  const bytes = Buffer.from(receipt.signature, 'base64url');
  // One spelling per signature: a re-spelled one is not a second valid copy.
  if (bytes.toString('base64url') !== receipt.signature) return false;
  return verifyBytes(receiptMessage(receipt), bytes.toString('base64'), rawPublic);
}
