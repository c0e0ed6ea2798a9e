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

function canonical(value: unknown, open: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
      checkWellFormed(value);
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Error(Number.isNaN(value) ? 'NaN is not allowed' : 'Infinity is not allowed');
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      return JSON.stringify(value) as string | undefined;
  }
  if (value === null) return 'null';
  if (open.has(value)) throw new Error('Circular reference detected');
  open.add(value);
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
    out = '{';
    let first = true;
    // Default sort: UTF-16 code units, the order RFC 8785 prescribes.
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined || typeof item === 'symbol') continue;
      checkWellFormed(key);
      out += `${first ? '' : ','}${JSON.stringify(key)}:${canonical(item, open)}`;
      first = false;
    }
    out += '}';
  }
  open.delete(value);
  return out;
}

/**
 * RFC 8785 (JSON Canonicalization Scheme) serialisation: members sorted by UTF-16 code units,
 * numbers and strings as ECMAScript serialises them; NaN, infinities, lone surrogates and cycles
 * are refused. Built as one string in one pass (ingest canonicalises every payload; the
 * `canonicalize` package, kept as the test oracle, costs about twice as much).
 */
export function canonicalJson(value: unknown): string {
  const text = canonical(value, new Set());
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

/** One-shot `crypto.hash` (Node ≥ 20.12): no Hash object per call, a third of createHash's cost; every event, API key check and audit entry is hashed. */
export function sha256Hex(input: string | Buffer): string {
  return hash('sha256', input, 'hex');
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
