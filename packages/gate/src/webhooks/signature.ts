import { constantTimeEqual, signTimestampedBody } from '@vigil/platform';

/** `X-Gate-Signature` value: `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the webhook secret. */
export const signDelivery = signTimestampedBody;

export interface VerifyDeliveryInput {
  secret: string;
  /** The request body exactly as received (bytes as a UTF-8 string), before any JSON parsing. */
  rawBody: string;
  /** The `X-Gate-Signature` header. */
  signature: string | undefined;
  /** The `X-Gate-Timestamp` header (Unix seconds). */
  timestamp: string | undefined;
  /** Refuse deliveries signed longer ago than this (replay protection). Default 300 s. */
  toleranceSeconds?: number;
  nowSeconds?: number;
}

/**
 * For receivers of gate webhooks: true when the delivery was signed with `secret` and is fresh.
 * The comparison is constant-time.
 */
export function verifyGateSignature(input: VerifyDeliveryInput): boolean {
  const { secret, rawBody, signature, timestamp } = input;
  if (!signature || !timestamp || !/^\d+$/.test(timestamp)) return false;
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (input.toleranceSeconds ?? 300)) return false;
  return constantTimeEqual(signature, signDelivery(secret, Number(timestamp), rawBody));
}
