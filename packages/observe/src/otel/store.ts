// otel_spans: one row per stored span (trace_id, span_id), written in the ingest transaction of
// its events, so a span sent again (an exporter's retry) is recognised and stored once.
import type { Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';

export interface StoredSpan {
  trace_id: string;
  span_id: string;
  session_id: string;
}

/** Spans of these traces already stored (which of a batch are resends, and the session each trace went to). */
export async function storedSpansOfTraces(database: ObserveDatabase, traceIds: readonly string[]): Promise<StoredSpan[]> {
  if (traceIds.length === 0) return [];
  return database.db.selectFrom('otel_spans').select(['trace_id', 'span_id', 'session_id']).where('trace_id', 'in', traceIds).execute();
}

export interface SpanClaim {
  trace_id: string;
  span_id: string;
  session_id: string;
  ts: number;
}

/** Most rows per INSERT: 4 parameters each stays far below either database's limit. */
const CLAIM_CHUNK = 1000;

/**
 * Inserts the spans' rows inside the ingest transaction; answers the keys (`trace:span`) another
 * request stored first (on PostgreSQL a concurrent insert of the same key waits for its commit).
 */
export async function claimSpans(trx: Transaction<ObserveSchema>, claims: readonly SpanClaim[]): Promise<Set<string>> {
  const taken = new Set(claims.map((claim) => `${claim.trace_id}:${claim.span_id}`));
  for (let i = 0; i < claims.length; i += CLAIM_CHUNK) {
    const inserted = await trx
      .insertInto('otel_spans')
      .values(claims.slice(i, i + CLAIM_CHUNK))
      .onConflict((oc) => oc.columns(['trace_id', 'span_id']).doNothing())
      .returning(['trace_id', 'span_id'])
      .execute();
    for (const row of inserted) taken.delete(`${row.trace_id}:${row.span_id}`);
  }
  return taken;
}

/** Retention removes whole sessions: their spans go with them (a span sent after that is stored anew). */
export async function deleteSessionSpans(trx: Transaction<ObserveSchema>, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length > 0) await trx.deleteFrom('otel_spans').where('session_id', 'in', sessionIds).execute();
}
