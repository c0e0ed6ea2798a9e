import { z } from 'zod';

let lastMs = Number.NaN;
let lastIso = '';

/**
 * Every timestamp the services emit: ISO 8601 UTC with milliseconds. The last answer is kept: one
 * write stamps its row, its audit entries and its answer with the same millisecond, and a `Date`
 * and its text for each cost a gate POST more than the comparison.
 */
export function toIso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** `toIso` for a time that may not have happened yet (never used, not revoked): null stays null. */
export function toIsoOrNull(ms: number | null): string | null {
  return ms === null ? null : toIso(ms);
}

const isoDateTime = z.iso.datetime({ offset: true, local: true });
const isoDate = z.iso.date();

/**
 * Parses an ISO 8601 date-time (with `Z`, an offset, or no zone, read as UTC) or a calendar date
 * (midnight UTC). Returns epoch milliseconds, or null when the text is not ISO 8601.
 */
export function parseIsoTimestamp(text: string): number | null {
  // The events of a batch mostly carry one timestamp: the last answer is kept.
  if (text === lastParsed.text) return lastParsed.ms;
  const ms = parseUncached(text);
  lastParsed = { text, ms };
  return ms;
}

let lastParsed: { text: string; ms: number | null } = { text: '', ms: null };

function parseUncached(text: string): number | null {
  let normalised: string;
  if (isoDateTime.safeParse(text).success) {
    normalised = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/.test(text) ? text : `${text}Z`;
  } else if (isoDate.safeParse(text).success) {
    normalised = `${text}T00:00:00.000Z`;
  } else {
    return null;
  }
  const ms = Date.parse(normalised);
  return Number.isFinite(ms) ? ms : null;
}

/** Zod schema: an ISO 8601 timestamp string, decoded to epoch milliseconds. */
export const isoTimestampMs = z
  .string()
  .transform((text, ctx) => {
    const ms = parseIsoTimestamp(text);
    if (ms === null) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 timestamp' });
      return z.NEVER;
    }
    return ms;
  })
  .meta({ type: 'string', format: 'date-time' });

/** A query with optional `from` and `to` (epoch ms), refined so that `from` after `to` is a 400 naming `from`. */
export function periodInOrder<T extends z.ZodType<{ from?: number | undefined; to?: number | undefined }>>(schema: T): T {
  return schema.refine((q) => q.from === undefined || q.to === undefined || q.from <= q.to, { message: 'from must not be after to', path: ['from'] });
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** A calendar window in UTC. */
export type UtcWindow = 'hour' | 'day' | 'month';

/** The start of the UTC hour, day or month holding `now` (both services count spend in the same windows). */
export function utcWindowStart(window: UtcWindow, now: number): number {
  const d = new Date(now);
  if (window === 'hour') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
  if (window === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
