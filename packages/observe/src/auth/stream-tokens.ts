import { constantTimeEqual, generateSecret, sha256Hex } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import type { ApiKeyRow } from './tables.ts';

/** How long a stream token opens GET /api/stream (an EventSource reconnecting meanwhile reuses it). */
export const STREAM_TOKEN_TTL_MS = 60_000;

/**
 * A token for `GET /api/stream?token=`, for browsers' EventSource, which cannot send an
 * Authorization header. Only its SHA-256 is stored, in its own table: it is never an API key, and
 * no other route reads `?token=`.
 */
export async function createStreamToken(ctx: ObserveContext, keyId: string | null): Promise<{ token: string; expiresAt: number }> {
  const secret = generateSecret('vst');
  const expiresAt = ctx.clock.now() + STREAM_TOKEN_TTL_MS;
  await ctx.database.db.insertInto('stream_tokens').values({ token_hash: secret.hash, key_id: keyId, expires_at: expiresAt }).execute();
  return { token: secret.raw, expiresAt };
}

/** The active key a stream token was created with; undefined when the token is unknown, expired or its key revoked. */
export async function keyOfStreamToken(ctx: ObserveContext, token: string): Promise<ApiKeyRow | undefined> {
  const hash = sha256Hex(token);
  const row = await ctx.database.db
    .selectFrom('stream_tokens as t')
    .innerJoin('api_keys as k', 'k.id', 't.key_id')
    .selectAll('k')
    .select('t.token_hash')
    .where('t.token_hash', '=', hash)
    .where('t.expires_at', '>', ctx.clock.now())
    .where('k.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row || !constantTimeEqual(row.token_hash, hash)) return undefined;
  const { token_hash: _hash, ...key } = row;
  return key;
}

export async function deleteExpiredStreamTokens(ctx: ObserveContext, now: number): Promise<void> {
  await ctx.database.db.deleteFrom('stream_tokens').where('expires_at', '<=', now).execute();
}
