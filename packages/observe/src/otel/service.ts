// OTLP trace ingest: spans decoded, refused or mapped to events, and the new ones appended through
// the one write path (EventAppender) in one transaction with their otel_spans rows.
import type { EventWriter, IncomingEvent } from '../events/index.ts';
import type { ObserveContext } from '../context.ts';
import { identityOf, mapSpan, resolveIdentities } from './mapping.ts';
import type { PartialSuccess, WireTraceRequest } from './proto.ts';
import { spansOf, type OtlpSpan, type RefusedSpan } from './spans.ts';
import { claimSpans, storedSpansOfTraces, type SpanClaim } from './store.ts';

/** How many refusals the partial-success message names (the count covers them all). */
const NAMED_REFUSALS = 5;

function partialSuccessOf(refused: readonly RefusedSpan[]): PartialSuccess | null {
  if (refused.length === 0) return null;
  const named = refused.slice(0, NAMED_REFUSALS).map((r) => `span ${r.span}: ${r.reason}`);
  const more = refused.length > NAMED_REFUSALS ? `; and ${refused.length - NAMED_REFUSALS} more` : '';
  return { rejectedSpans: refused.length, errorMessage: `${named.join('; ')}${more}` };
}

/** Raised in the ingest transaction when spans of the batch were stored by a concurrent request meanwhile. */
class SpansStoredMeanwhile extends Error {
  constructor(readonly keys: Set<string>) {
    super(`${keys.size} span(s) were stored by a concurrent request`);
  }
}

const keyOf = (span: Pick<OtlpSpan, 'traceId' | 'spanId'>): string => `${span.traceId}:${span.spanId}`;

/** Retries after a concurrent request stored some of the same spans; each round removes at least one span. */
const MAX_ROUNDS = 5;

/**
 * Stores the request's new spans (a span already stored is acknowledged, not stored again) in one
 * transaction; answers OTLP's partial success for the spans refused, or null when none was.
 */
export async function ingestTraces(ctx: ObserveContext, request: WireTraceRequest, writtenBy: EventWriter): Promise<PartialSuccess | null> {
  const { spans: decoded, refused } = spansOf(request);
  // A span twice in one request is one span.
  const unique = new Map<string, OtlpSpan>();
  for (const span of decoded) if (!unique.has(keyOf(span))) unique.set(keyOf(span), span);

  const traceIds = [...new Set([...unique.values()].map((span) => span.traceId))];
  const stored = await storedSpansOfTraces(ctx.database, traceIds);
  const storedSessions = new Map(stored.map((row) => [row.trace_id, row.session_id]));
  for (const row of stored) unique.delete(`${row.trace_id}:${row.span_id}`);

  // Identities are resolved over the whole request (parents name the session and agent of children).
  const identities = resolveIdentities(decoded, storedSessions);
  let batch: { span: OtlpSpan; events: IncomingEvent[] }[] = [];
  for (const span of unique.values()) {
    const mapped = mapSpan(span, identityOf(identities, span), ctx.prices);
    if ('reason' in mapped) refused.push({ span: span.spanId, reason: mapped.reason });
    else batch.push({ span, events: mapped.events });
  }

  for (let round = 0; batch.length > 0; round++) {
    const claims: SpanClaim[] = batch.map(({ span, events }) => ({
      trace_id: span.traceId,
      span_id: span.spanId,
      session_id: events[0]!.sessionId,
      ts: events[0]!.timestamp!,
    }));
    try {
      await ctx.events.append(
        batch.flatMap((entry) => entry.events),
        ctx.clock.now(),
        {
          writtenBy,
          inTransaction: async (trx) => {
            const taken = await claimSpans(trx, claims);
            if (taken.size > 0) throw new SpansStoredMeanwhile(taken);
          },
        },
      );
      break;
    } catch (error) {
      if (!(error instanceof SpansStoredMeanwhile) || round + 1 >= MAX_ROUNDS) throw error;
      batch = batch.filter((entry) => !error.keys.has(keyOf(entry.span)));
    }
  }
  return partialSuccessOf(refused);
}
