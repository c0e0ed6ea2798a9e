// RFC 8785 forbids lone surrogates, and PostgreSQL cannot store U+0000 in text or jsonb.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** Path of the first string (key or value) in a JSON value that cannot be hashed or stored, or null. */
export function unstorableTextPath(value: unknown): (string | number)[] | null {
  const path: (string | number)[] = [];
  return findUnstorable(value, path) ? path : null;
}

// Walks with one shared path (pushed and popped), so a clean body allocates nothing per value.
function findUnstorable(value: unknown, path: (string | number)[]): boolean {
  if (typeof value === 'string') return UNSTORABLE.test(value);
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      if (findUnstorable(value[i], path)) return true;
      path.pop();
    }
    return false;
  }
  for (const key in value) {
    path.push(key);
    if (UNSTORABLE.test(key) || findUnstorable((value as Record<string, unknown>)[key], path)) return true;
    path.pop();
  }
  return false;
}

/** Deepest nesting of objects and arrays a JSON body may have (the top-level value is level 1). */
export const MAX_JSON_DEPTH = 100;

export interface JsonValueProblem {
  path: (string | number)[];
  message: string;
}

const UNSTORABLE_MESSAGE = 'text must not contain U+0000 or unpaired UTF-16 surrogates';

/**
 * The first part of a parsed JSON body no route can hash or store, with its path: text with U+0000
 * or unpaired surrogates (keys too), a number literal beyond the double range (parsed as ±Infinity,
 * which has no JSON form), or nesting deeper than `maxDepth`. The walk never recurses deeper than
 * `maxDepth`, so a hostile body cannot overflow the stack; a clean body allocates nothing per value.
 */
export function jsonValueProblem(value: unknown, maxDepth: number = MAX_JSON_DEPTH): JsonValueProblem | null {
  const path: (string | number)[] = [];
  const message = findProblem(value, path, 0, maxDepth);
  return message === null ? null : { path, message };
}

function findProblem(value: unknown, path: (string | number)[], depth: number, maxDepth: number): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? UNSTORABLE_MESSAGE : null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'number is out of range (beyond ±1.7976931348623157e308)';
  if (value === null || typeof value !== 'object') return null;
  if (depth >= maxDepth) return `nesting is deeper than ${maxDepth} levels`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const problem = findProblem(value[i], path, depth + 1, maxDepth);
      if (problem !== null) return problem;
      path.pop();
    }
    return null;
  }
  for (const key in value) {
    path.push(key);
    if (UNSTORABLE.test(key)) return UNSTORABLE_MESSAGE;
    const problem = findProblem((value as Record<string, unknown>)[key], path, depth + 1, maxDepth);
    if (problem !== null) return problem;
    path.pop();
  }
  return null;
}

/** Texts whose parsed value is kept (sharedJsonValue), and the longest kept. */
const SHARED_JSON_TEXTS = 512;
const SHARED_JSON_MAX_CHARS = 4096;
const sharedJsonValues = new Map<string, unknown>();

function deepFreeze(value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/**
 * JSON.parse of a stored text that repeats from row to row (a request's policy decision: one text
 * per rule), parsed once and shared: the value is frozen all through, so no reader can change what
 * another reads. A text past SHARED_JSON_MAX_CHARS is parsed each time (and frozen the same).
 */
export function sharedJsonValue(text: string): unknown {
  let value = sharedJsonValues.get(text);
  if (value === undefined) {
    value = deepFreeze(JSON.parse(text));
    if (text.length <= SHARED_JSON_MAX_CHARS) {
      if (sharedJsonValues.size >= SHARED_JSON_TEXTS) sharedJsonValues.clear();
      sharedJsonValues.set(text, value);
    }
  }
  return value;
}

/**
 * An integer with its thousands grouped as en-US writes them (`12,345`), without Intl: the first
 * `toLocaleString` of a process maps about 5 MiB of the node binary's ICU data into its RSS.
 */
export function groupedInteger(n: number): string {
  const digits = String(Math.abs(Math.trunc(n)));
  let out = '';
  for (let end = digits.length; end > 0; end -= 3) out = digits.slice(Math.max(0, end - 3), end) + (out === '' ? '' : `,${out}`);
  return (n <= -1 ? '-' : '') + out;
}

/**
 * Orders two strings by their UTF-16 code units, as SQLite's BINARY collation and `<` do: the same
 * order on every host, where `localeCompare` follows the host's locale and ICU version (and maps
 * about 2 MiB of ICU collation data into the process on its first call).
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
