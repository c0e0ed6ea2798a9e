import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

const SURROGATE = /[\uD800-\uDFFF]/;

/** Strings must be well-formed UTF-16: a lone surrogate has no UTF-8 form, so no canonical bytes. */
function checkWellFormed(text: string): void {
  if (!SURROGATE.test(text)) return;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (!(next >= 0xdc00 && next <= 0xdfff)) throw new Error('Lone surrogate is not allowed');
      i++;
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      throw new Error('Lone surrogate is not allowed');
    }
  }
}

/** Keys this short are remembered quoted (a payload's keys repeat from event to event); at most QUOTED_KEYS of them. */
const QUOTED_KEY_MAX_CHARS = 64;
const QUOTED_KEYS = 4096;
const quotedKeys = new Map<string, string>();

/** `"key":` as JSON writes it; the key is checked well-formed first (a remembered one was). */
function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    checkWellFormed(key);
    quoted = `${JSON.stringify(key)}:`;
    if (key.length <= QUOTED_KEY_MAX_CHARS && quotedKeys.size < QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** Below this many keys an object's keys are sorted in place by insertion (Array#sort allocates its own work space). */
const INSERTION_SORT_MAX = 16;

/** Sorts by UTF-16 code units (what `<` compares, and the default sort's order for strings). */
function sortKeys(keys: string[]): void {
  if (keys.length > INSERTION_SORT_MAX) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
}

/** A string as canonicalJson writes it (RFC 8785: as ECMAScript serialises it; a lone surrogate refused). */
export function canonicalString(text: string): string {
  checkWellFormed(text);
  return JSON.stringify(text);
}

/** `open`: the objects and arrays being written, outermost first (a value found among them is a cycle). */
function canonical(value: unknown, open: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
      return canonicalString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Error(Number.isNaN(value) ? 'NaN is not allowed' : 'Infinity is not allowed');
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      return JSON.stringify(value) as string | undefined;
  }
  if (value === null) return 'null';
  if (open.includes(value)) throw new Error('Circular reference detected');
  open.push(value);
  let out: string | undefined;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    out = canonical((value as { toJSON(): unknown }).toJSON(), open);
  } else if (Array.isArray(value)) {
    out = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (i > 0) out += ',';
      out += item === undefined || typeof item === 'symbol' ? 'null' : canonical(item, open);
    }
    out += ']';
  } else {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    // RFC 8785's order: UTF-16 code units.
    sortKeys(keys);
    out = '{';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const item = record[key];
      if (item === undefined || typeof item === 'symbol') continue;
      if (out.length > 1) out += ',';
      out += quotedKey(key);
      out += canonical(item, open);
    }
    out += '}';
  }
  open.pop();
  return out;
}

/**
 * RFC 8785 (JSON Canonicalization Scheme) serialisation: members sorted by UTF-16 code units,
 * numbers and strings as ECMAScript serialises them; NaN, infinities, lone surrogates and cycles
 * are refused. Built as one string in one pass (ingest canonicalises every payload; the
 * `canonicalize` package, kept as the test oracle, costs about twice as much).
 */
export function canonicalJson(value: unknown): string {
  const text = canonical(value, []);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  // Built by appending, the text is a tree of string pieces (about 950 bytes of heap for a 160-
  // character payload, 190 once flat). Ingest holds it across the group commit's waits, and V8
  // flattens it at the first hash or INSERT anyway: flattened now (converting a string to a
  // number flattens it first; the number is not used), the pieces die young instead of being
  // copied by every scavenge until then.
  void Number(text);
  return text;
}

/** Standard base64 (RFC 4648 §4) with its padding: groups of four, the last one padded. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The bytes of standard, padded base64 in its one canonical spelling, else null: no whitespace,
 * no url-safe letters, no missing or extra padding, and the unused bits of the last character zero
 * (Buffer.from alone accepts all of these, so one signature or key had many spellings).
 */
export function decodeBase64(text: string): Buffer | null {
  if (!BASE64.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/** One-shot `crypto.hash` (Node ≥ 20.12): no Hash object per call, a third of createHash's cost; every event, API key check and audit entry is hashed. */
export function sha256Hex(input: string | Buffer): string {
  return hash('sha256', input, 'hex');
}

/**
 * SHA-256 as a Buffer. crypto.hash's 'buffer' output gives every digest an ArrayBuffer of its own
 * (about 1.5 µs a call here, and a backing store for the GC to free); its latin1 string copied into
 * Node's pooled buffers costs 0.6 µs. Every leaf and node of a log, and every event a verifier
 * checks, is hashed here.
 */
export function sha256(input: string | Buffer): Buffer {
  return Buffer.from(hash('sha256', input, 'binary'), 'binary');
}

export function hmacSha256Hex(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** A signed webhook's signature header value: `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the secret. */
export function signTimestampedBody(secret: string, timestampSeconds: number, rawBody: string): string {
  return `sha256=${hmacSha256Hex(secret, `${timestampSeconds}.${rawBody}`)}`;
}

/** Constant-time string comparison; unequal lengths are compared against a dummy so timing stays flat. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

export interface GeneratedSecret {
  raw: string;
  hash: string;
  prefix: string;
}

/** A random bearer secret with a recognisable prefix; only its SHA-256 is ever stored. */
export function generateSecret(prefix: string): GeneratedSecret {
  const raw = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { raw, hash: sha256Hex(raw), prefix: raw.slice(0, prefix.length + 9) };
}
