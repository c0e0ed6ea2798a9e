// Bounds of the numbers the gate accepts (docs/reference/numeric-bounds.md). The gate sums none of them;
// numbers in policy conditions and request params may be any finite JSON number (they are only
// compared).

/** Requests per minute of one API key. */
export const MAX_RATE_LIMIT = 1_000_000;
/** Magnitude of a policy's priority. */
export const MAX_PRIORITY = 1_000_000;
/** Rows a list request may skip (offset). */
export const MAX_OFFSET = 10_000_000;
