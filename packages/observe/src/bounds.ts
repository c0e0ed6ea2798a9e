import { z } from 'zod';

// Bounds of the numbers observe accepts (docs/reference/numeric-bounds.md). Each is far beyond any real
// figure and chosen so that no sum can overflow either database: the largest accepted value times
// 10^12 events stays far below the double-precision limit (1.8e308), and a token count times the
// events of one hourly rollup cell stays far below BIGINT (9.2e18); token totals over longer
// ranges are summed as double precision (analytics/aggregate.ts).

/** USD of one spend event (llm_response, cost_tracked): 10^12 events sum to at most 1e18. */
export const MAX_COST_USD = 1e6;
/** Milliseconds of one duration or latency (~31.7 years): 10^12 of them sum to 1e24. */
export const MAX_DURATION_MS = 1e12;
/** Tokens of one call (100× the largest context window): 10^12 calls sum to 1e21 as doubles. */
export const MAX_TOKENS = 1e9;
/** Counts carried by one event (a session's tool calls, a form's fields). */
export const MAX_COUNT = 1e9;
/**
 * Magnitude of a threshold or a measured figure (alert and guardrail thresholds, custom metric
 * values, evaluation spend limits): above every sum the bounds above allow, far from overflow.
 */
export const MAX_FIGURE = 1e18;
/** Rows a list request may skip (offset). */
export const MAX_OFFSET = 10_000_000;
// Prices in MODEL_PRICES are bounded by @vigil/pricing (MAX_PRICE_PER_MILLION_USD).

/** 1e18 as "1e18", 100 as "100": bounds written as a JSON number a client could send. */
export function showBound(n: number): string {
  return Math.abs(n) >= 1e6 ? n.toExponential().replace('e+', 'e') : String(n);
}

/**
 * A number from `min` to `max` (inclusive); the message names the range, prefixed by `field` when
 * given. `typeError` replaces zod's message for a value that is not a number.
 */
export function boundedNumber(min: number, max: number, field?: string, typeError?: string) {
  const message = `${field === undefined ? 'must be' : `${field} must be`} ${showBound(min)} to ${showBound(max)}`;
  return z
    .number(typeError === undefined ? undefined : { error: typeError })
    .min(min, message)
    .max(max, message);
}

/** A whole number from 0 to `max`. */
export function boundedCount(max: number, field?: string) {
  const message = `${field === undefined ? 'must be' : `${field} must be`} a whole number from 0 to ${showBound(max)}`;
  return z.number().int(message).min(0, message).max(max, message);
}
