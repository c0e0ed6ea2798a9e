/**
 * Error-message normalisation for `GET /api/reflect?analysis=error_patterns`: the volatile parts of
 * a message (ids, numbers, quoted values, paths, addresses, times) become placeholders, so that
 * "timeout after 3000 ms calling /api/users/42" and "timeout after 5000 ms calling /api/users/7"
 * are one pattern: "timeout after <n> ms calling <path>".
 */

/** Longer messages are cut before normalising (the rest rarely changes the pattern and costs regex time). */
export const MAX_MESSAGE_CHARS = 2000;
/** A pattern is at most this long (cut with an ellipsis). */
export const MAX_PATTERN_CHARS = 300;

/**
 * Replacements in order: each later rule sees the placeholders of the earlier ones, which contain
 * no digits, quotes or slashes, so they are never rewritten again. Stored reflect states hold
 * patterns: a change here bumps REFLECT_STATE_VERSION (state.ts).
 */
const RULES: readonly [RegExp, string][] = [
  // URLs before paths, emails and numbers (they contain all three).
  [/\b[a-z][a-z0-9+.-]*:\/\/[^\s'"`<>()[\]{}]+/gi, '<url>'],
  [/\b[\w.%+-]+@[\w-]+(?:\.[\w-]+)+\b/g, '<email>'],
  // ISO 8601 date-times and dates, then clock times.
  [/\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])/gi, '<timestamp>'],
  [/\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g, '<timestamp>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  // ULIDs: 26 Crockford base-32 characters with at least one digit (a long word stays a word).
  [/\b(?=[0-9A-HJKMNP-TV-Z]{0,25}\d)[0-9A-HJKMNP-TV-Z]{26}\b/gi, '<ulid>'],
  // Quoted values; an apostrophe inside a word ("can't") opens nothing.
  [/(?<![\w'])'[^'\n]*'(?![\w])/g, '<str>'],
  [/"(?:[^"\\\n]|\\.)*"/g, '<str>'],
  [/`[^`\n]*`/g, '<str>'],
  // File and URL paths: a token starting with /, ./, ../, ~/ or a drive letter.
  [/(?<![\w.<>/-])(?:[a-z]:\\|~\/|\.{1,2}\/|\/)[^\s'"`,;()[\]{}<>]*[^\s'"`,;:.()[\]{}<>]/gi, '<path>'],
  // Hex ids: 0x…, or 8+ hex characters mixing digits and letters (a plain word or number is left to the other rules).
  [/\b0x[0-9a-f]+\b/gi, '<hex>'],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi, '<hex>'],
  // Numbers, signed ("-12" is "12") and decimal, also inside identifiers ("user42" → "user<n>").
  [/(?<![\w.-])-?\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*/g, '<n>'],
];

/** Normalises an error message to its pattern (see RULES); whitespace collapses, case is kept. */
export function normaliseErrorMessage(message: string): string {
  let text = message.length > MAX_MESSAGE_CHARS ? message.slice(0, MAX_MESSAGE_CHARS) : message;
  for (const [pattern, placeholder] of RULES) text = text.replace(pattern, placeholder);
  text = text.replace(/\s+/g, ' ').trim();
  if (text.length > MAX_PATTERN_CHARS) text = `${text.slice(0, MAX_PATTERN_CHARS - 1)}…`;
  return text === '' ? '(empty message)' : text;
}

/**
 * A memo in front of normaliseErrorMessage: error events of one kind usually repeat the exact same
 * text, so each distinct text is normalised once per request.
 */
export class PatternCache {
  private readonly cache = new Map<string, string>();
  constructor(private readonly capacity = 50_000) {}

  pattern(message: string): string {
    let pattern = this.cache.get(message);
    if (pattern === undefined) {
      pattern = normaliseErrorMessage(message);
      if (this.cache.size < this.capacity) this.cache.set(message, pattern);
    }
    return pattern;
  }
}
