// Idempotent ingest (docs/api.md#idempotent-ingest): a batch sent with an Idempotency-Key is stored
// once. The key's row (its API key's scope, a SHA-256 of the body bytes, the answer) is written in
// the batch's own ingest transaction, so events and key commit together or not at all; a repeat
// within IDEMPOTENCY_KEY_TTL_MS answers the stored answer. A leased job deletes expired rows.
import { createHash } from 'node:crypto';
import { Transform, pipeline, type Readable } from 'node:stream';
import type { FastifyRequest, preParsingHookHandler } from 'fastify';
import { sql, type Transaction } from 'kysely';
import { z } from 'zod';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { IdempotencyKeyRow } from './tables.ts';

/** How long a key is answered from its stored row (the IETF draft leaves it to the server; a day covers any client's retry window). */
const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60_000;
/** How often the sweep runs, and how many rows one of its DELETEs removes. */
export const IDEMPOTENCY_SWEEP_INTERVAL_MS = 10 * 60_000;
const SWEEP_BATCH = 1000;

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

/** The request header: 1–255 printable ASCII characters (space to tilde). */
export const idempotencyKeyHeaderSchema = z
  .string()
  .min(1, 'Idempotency-Key must not be empty')
  .max(255, 'Idempotency-Key is at most 255 characters')
  .regex(/^[\x20-\x7e]+$/, 'Idempotency-Key must be printable ASCII (space to ~)')
  .meta({
    description:
      'Makes the batch idempotent for 24 hours: a repeat with the same key and the same body bytes stores nothing and answers the first answer (with `Idempotent-Replayed: true`); the same key with another body is a 422; a repeat while the first is still being stored is a 409 with `Retry-After`. Keys are per API key.',
  });

/** The SHA-256 of each keyed request's body bytes, taken while the body streams to the JSON parser. */
const bodyDigests = new WeakMap<FastifyRequest, string>();

/** preParsing of the ingest route: hashes the body of a request that carries an Idempotency-Key, passing it through unchanged. */
export const digestKeyedBody: preParsingHookHandler = (request, _reply, payload, done) => {
  if (request.headers[IDEMPOTENCY_KEY_HEADER] === undefined) return done(null, payload);
  const hash = createHash('sha256');
  const tee = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      bodyDigests.set(request, hash.digest('hex'));
      callback();
    },
  });
  // An aborted or failed upload destroys the tee with the error, which the parser reports.
  pipeline(payload as Readable, tee, () => {});
  done(null, tee);
};

/** The SHA-256 (hex) of the request's body bytes; that of no bytes when it had none. */
export function bodyDigestOf(request: FastifyRequest): string {
  return bodyDigests.get(request) ?? createHash('sha256').digest('hex');
}

/** Whose keys these are: the API key's id (keys of different API keys never collide), '' with AUTH_DISABLED. */
export interface IdempotencyClaim {
  scope: string;
  key: string;
  fingerprint: string;
}

export type StoredAnswer = Pick<IdempotencyKeyRow, 'fingerprint' | 'status' | 'body'>;

/** The unexpired row of the key, if any. */
export async function findStoredAnswer(database: ObserveDatabase, claim: IdempotencyClaim, now: number): Promise<StoredAnswer | undefined> {
  return database.db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'status', 'body'])
    .where('scope', '=', claim.scope)
    .where('idempotency_key', '=', claim.key)
    .where('created_at', '>', now - IDEMPOTENCY_KEY_TTL_MS)
    .executeTakeFirst();
}

/** Raised in the ingest transaction when another request stored the key first (then committed). */
export class KeyStoredMeanwhile extends Error {
  constructor() {
    super('the Idempotency-Key was stored by a concurrent request');
  }
}

/**
 * Writes the key's row in the batch's ingest transaction; an expired row of the same key is taken
 * over. A live row (another request's, committed: on PostgreSQL a concurrent insert of the key waits
 * for the other transaction) refuses the batch with KeyStoredMeanwhile.
 */
export async function storeKey(trx: Transaction<ObserveSchema>, claim: IdempotencyClaim, answer: { status: number; body: string }, now: number): Promise<void> {
  const row: IdempotencyKeyRow = {
    scope: claim.scope,
    idempotency_key: claim.key,
    fingerprint: claim.fingerprint,
    status: answer.status,
    body: answer.body,
    created_at: now,
  };
  const written = await trx
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['scope', 'idempotency_key'])
        .doUpdateSet({ fingerprint: row.fingerprint, status: row.status, body: row.body, created_at: row.created_at })
        .where('idempotency_keys.created_at', '<=', now - IDEMPOTENCY_KEY_TTL_MS),
    )
    .returning('scope')
    .executeTakeFirst();
  if (written === undefined) throw new KeyStoredMeanwhile();
}

/** The sweep: deletes the rows expired at `now`, SWEEP_BATCH per statement so no transaction grows large. */
export async function deleteExpiredKeys(database: ObserveDatabase, now: number): Promise<number> {
  const cutoff = now - IDEMPOTENCY_KEY_TTL_MS;
  let deleted = 0;
  for (;;) {
    const result =
      await sql`delete from idempotency_keys where (scope, idempotency_key) in (select scope, idempotency_key from idempotency_keys where created_at <= ${cutoff} order by created_at limit ${SWEEP_BATCH})`.execute(
        database.db,
      );
    const count = Number(result.numAffectedRows ?? 0);
    deleted += count;
    if (count < SWEEP_BATCH) return deleted;
  }
}

/** Keys of this instance's requests being stored now: a repeat meanwhile is answered 409 at once. */
export class KeysInFlight {
  private readonly keys = new Set<string>();

  /** False when the key is in flight already; otherwise marks it until `release`. */
  take(claim: IdempotencyClaim): boolean {
    const id = `${claim.scope}\n${claim.key}`;
    if (this.keys.has(id)) return false;
    this.keys.add(id);
    return true;
  }

  release(claim: IdempotencyClaim): void {
    this.keys.delete(`${claim.scope}\n${claim.key}`);
  }
}
