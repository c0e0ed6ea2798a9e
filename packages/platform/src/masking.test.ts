import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maskDetectorList, Masker, maskMatcherSchema, parseMaskSpecs, type MaskDetector } from './masking.ts';

const redact = (detector: MaskDetector, text: string): string => new Masker({ detectors: [detector] }).mask({ text }).roots.text;

const cases: Record<MaskDetector, { hits: string[]; misses: string[] }> = {
  email: {
    hits: ['alice@example.com', 'first.last+tag@mail.example.co.uk', 'x_y-z@sub-domain.example.org'],
    misses: ['alice@localhost', 'user@192.168.1.1', '@example.com', 'not an address: a@b', 'me@example.c0m'],
  },
  phone: {
    hits: ['+44 20 7946 0958', '+1 (415) 555-2671', '(415) 555-2671', '415-555-2671', '+4915123456789'],
    misses: ['2026-11-22', 'v1.2.3', 'room 1234', '+12 34', '10.0.0.1', '192.168.100.1000', 'id 4155552671'],
  },
  card: {
    hits: ['4111 1111 1111 1111', '4111-1111-1111-1111', '5555555555554444', '378282246310005', '6011111111111117'],
    // Luhn fails; a timestamp (starts with 1); too short; 20 digits.
    misses: ['4111 1111 1111 1112', '5555555555554445', '1700000000000', '411111111111', '41111111111111111111'],
  },
  iban: {
    hits: ['DE89 3704 0044 0532 0130 00', 'GB82WEST12345698765432', 'FR14 2004 1010 0505 0001 3M02 606'],
    // Wrong check digits; lower case; too short.
    misses: ['DE00 3704 0044 0532 0130 00', 'GB82WEST12345698765433', 'de89370400440532013000', 'DE89 3704'],
  },
  secret: {
    hits: [
      'sk-proj-Abcdefghijklmnopqrstuvwx0123',
      'sk-ant-api03-abcdefghijklmnopqrstuvwxyz',
      'AKIAIOSFODNN7EXAMPLE',
      `ghp_${'A1b2C3d4E5'.repeat(4)}`,
      `github_pat_${'a'.repeat(30)}`,
      'Bearer eyJhbGciOiJIUzI1NiJ9.payload.signature',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----',
    ],
    misses: ['sk-short', 'task-abcdefghijklmnopqrstuvwxyz', 'AKIA1234', 'ghp_short', 'Bearer tokens are explained below', '-----BEGIN CERTIFICATE-----'],
  },
};

for (const [detector, { hits, misses }] of Object.entries(cases) as [MaskDetector, { hits: string[]; misses: string[] }][]) {
  test(`${detector}: true positives are replaced by [redacted:${detector}], near misses are kept`, () => {
    for (const hit of hits) assert.equal(redact(detector, `before ${hit} after`), `before [redacted:${detector}] after`, hit);
    for (const miss of misses) assert.equal(redact(detector, `before ${miss} after`), `before ${miss} after`, miss);
  });
}

test('a private key block cut short is redacted to the end of the text', () => {
  assert.equal(redact('secret', 'key: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC'), 'key: [redacted:secret]');
});

test('an IBAN followed by upper-case text keeps the text', () => {
  assert.equal(redact('iban', 'to DE89 3704 0044 0532 0130 00 OK'), 'to [redacted:iban] OK');
});

test('overlapping matches: the earliest wins, then the longest; markers are never matched again', () => {
  const masker = new Masker({
    detectors: ['secret', 'card', 'phone'],
    specs: [{ id: 'digits', kind: 'regex', pattern: '\\d{4}', flags: '', label: 'digits' }],
  });
  const { roots, counts } = masker.mask({ text: 'Bearer sk-abcdefghijklmnopqrstuvwxyz then 4111111111111111' });
  assert.equal(roots.text, '[redacted:secret] then [redacted:card]');
  assert.deepEqual(counts, [
    { id: 'card', count: 1 },
    { id: 'secret', count: 1 },
  ]);
});

test('path rules replace the value whole (any JSON), with * for any key or index; keys are redacted too; nothing else is copied', () => {
  const masker = new Masker({
    detectors: ['email'],
    specs: [
      { id: 'ssn', kind: 'path', path: 'payload.customers[*].ssn', label: 'ssn' },
      { id: 'secret-blob', kind: 'path', path: 'metadata.blob', label: 'blob' },
    ],
  });
  const untouched = { deep: { list: [1, 2, 3] } };
  const input = {
    payload: { customers: [{ ssn: '078-05-1120', name: 'A' }, { ssn: 123456789 }], other: untouched, 'bob@example.com': 'key holds an address' },
    metadata: { blob: { anything: ['at', 'all'] } },
  };
  const { roots, counts } = masker.mask(input);
  assert.deepEqual(roots, {
    payload: { customers: [{ ssn: '[redacted:ssn]', name: 'A' }, { ssn: '[redacted:ssn]' }], other: untouched, '[redacted:email]': 'key holds an address' },
    metadata: { blob: '[redacted:blob]' },
  });
  assert.equal(roots.payload.other, untouched, 'an unchanged branch is the caller’s own object');
  assert.deepEqual(input.payload.customers[0], { ssn: '078-05-1120', name: 'A' }, 'the input is not changed');
  assert.deepEqual(counts, [
    { id: 'email', count: 1 },
    { id: 'secret-blob', count: 1 },
    { id: 'ssn', count: 2 },
  ]);
});

test('with an HMAC key, markers carry the first 16 hex of HMAC-SHA256(key, value): equal values, equal markers', () => {
  const masker = new Masker({ detectors: ['email'], hmacKey: 'a-key-of-sixteen-chars' });
  const { roots } = masker.mask({ a: 'ann@example.com', b: 'ann@example.com', c: 'bob@example.com' });
  assert.match(roots.a, /^\[redacted:email:[0-9a-f]{16}\]$/);
  assert.equal(roots.a, roots.b);
  assert.notEqual(roots.a, roots.c);
});

test('nothing to apply: the input is answered as it is', () => {
  const input = { payload: { text: 'alice@example.com' } };
  const masker = new Masker({});
  assert.equal(masker.active, false);
  assert.equal(masker.mask(input).roots, input);
});

test('rule definitions: a path needs a root and keys, flags are checked, a catastrophic pattern is refused', () => {
  assert.equal(maskMatcherSchema.safeParse({ kind: 'path', path: 'payload' }).success, false);
  assert.equal(maskMatcherSchema.safeParse({ kind: 'path', path: 'payload..x' }).success, false);
  assert.deepEqual(maskMatcherSchema.parse({ kind: 'path', path: 'payload.a[*].b' }), { kind: 'path', path: 'payload.a[*].b', label: 'field' });
  assert.equal(maskMatcherSchema.safeParse({ kind: 'regex', pattern: 'x', flags: 'gg' }).success, false);
  assert.equal(maskMatcherSchema.safeParse({ kind: 'regex', pattern: 'x', label: 'Upper' }).success, false);
  const unsafe = maskMatcherSchema.safeParse({ kind: 'regex', pattern: '(a+)+$' });
  assert.equal(unsafe.success, false);
  assert.match(unsafe.error!.issues[0]!.message, /backtrack/);
});

test('the masking file (REDACTION_RULES_FILE): a JSON array of entries with unique ids that are not detector names', () => {
  assert.deepEqual(parseMaskSpecs('[{"id":"emp","kind":"regex","pattern":"EMP-\\\\d{6}"}]'), [
    { id: 'emp', kind: 'regex', pattern: 'EMP-\\d{6}', flags: '', label: 'pattern' },
  ]);
  assert.throws(() => parseMaskSpecs('{'), /is not JSON/);
  assert.throws(() => parseMaskSpecs('[{"id":"email","kind":"path","path":"payload.x"}]'), /detector name/);
  assert.throws(() => parseMaskSpecs('[{"id":"a","kind":"path","path":"payload.x"},{"id":"a","kind":"path","path":"payload.y"}]'), /used twice/);
});

test('REDACTION_DETECTORS: all, or a list of known detectors', () => {
  assert.deepEqual(maskDetectorList.parse('all'), ['email', 'phone', 'card', 'iban', 'secret']);
  assert.deepEqual(maskDetectorList.parse('card, email,card'), ['card', 'email']);
  assert.equal(maskDetectorList.safeParse('email,ssn').success, false);
});
