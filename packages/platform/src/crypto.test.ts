import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import canonicalize from 'canonicalize';
import { canonicalJson, sha256, sha256Hex } from './crypto.ts';

/** Values that exercise every rule of RFC 8785: member order by UTF-16 code units, number forms, escapes, nesting, skipped members. */
const VALUES: unknown[] = [
  null,
  true,
  0,
  -0,
  1e21,
  1e-7,
  0.1 + 0.2,
  -123.456e-30,
  Number.MAX_SAFE_INTEGER,
  '',
  'plain',
  'quote " backslash \\ control \u0001 \n line sep \u2028 para \u2029 emoji 😀 ü',
  [],
  {},
  [1, 'two', null, undefined, [3, [4]], { b: 1, a: 2 }],
  { b: 1, a: { d: [true, false], c: 'x' }, '': 0, é: 1, '\u00ff': 2, A: 3, '😀': 4, '\ue000': 5, skipped: undefined },
  {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  },
  { nested: { deeper: { deepest: [{ z: 1, y: [null, { x: 'v' }] }] } } },
  { date: new Date(0) },
  { toolName: 'web_search', callId: 'c1', arguments: { query: 'quarterly revenue report 1', maxResults: 10 } },
  // The same keys again (remembered quoted now), more keys than are sorted by insertion, a long key.
  { toolName: 'web_search', callId: 'c2', arguments: { maxResults: 5, query: 'q' } },
  Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7919) % 40}`, i])),
  { ['x'.repeat(100)]: 1, ['x'.repeat(99)]: 2, '\u20ac': [{ '\r': 1, '\ufb33': 2 }] },
  // One object reached twice, as siblings and nested: shared, not circular.
  (() => {
    const shared = { b: 1, a: [2] };
    return { first: shared, second: shared, list: [shared, { again: shared }] };
  })(),
];

describe('canonicalJson', () => {
  test('writes exactly what the canonicalize package (an RFC 8785 implementation) writes', () => {
    for (const value of VALUES) assert.equal(canonicalJson(value), canonicalize(value), JSON.stringify(value));
  });

  test('refuses what has no canonical form, with the same reasons', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const [value, reason] of [
      [Number.NaN, /NaN is not allowed/],
      [[1, Number.POSITIVE_INFINITY], /Infinity is not allowed/],
      ['\ud800', /Lone surrogate/],
      [{ '\udc00': 1 }, /Lone surrogate/],
      ['a\ud83dz', /Lone surrogate/],
      [circular, /Circular reference/],
      [undefined, /no JSON representation/],
    ] as const) {
      // Twice: what was refused once (a key among them) is not remembered as written.
      assert.throws(() => canonicalJson(value), reason);
      assert.throws(() => canonicalJson(value), reason);
    }
  });
});

test('sha256Hex and sha256 are SHA-256 of the UTF-8 text or the bytes, in hex and as bytes', () => {
  for (const input of ['', 'abc', 'ü😀', Buffer.from([0, 1, 2, 255])]) {
    assert.equal(sha256Hex(input), createHash('sha256').update(input).digest('hex'));
    assert.deepEqual(sha256(input), createHash('sha256').update(input).digest());
  }
});
