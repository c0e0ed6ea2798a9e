/**
 * The Ed25519 verifiers receipts can use (receipts.ts): libsodium through sodium-native when the
 * application installed it (half of OpenSSL's cost per verification), node:crypto, Web Crypto. Every
 * one must give Wycheproof's 151 Ed25519 vectors their verdicts, so which one a runtime picks never
 * changes what verifies. The vectors are the platform's committed copy (packages/platform/src/vectors).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { canonicalJson, ed25519Verifiers, importKey, receiptKeyId, verifyReceipt, type Ed25519Verifier } from './receipts.ts';

const suite = JSON.parse(readFileSync(new URL('../../platform/src/vectors/wycheproof/ed25519_test.json', import.meta.url), 'utf8')) as {
  numberOfTests: number;
  testGroups: { publicKey: { pk: string }; tests: { tcId: number; comment: string; msg: string; sig: string; result: 'valid' | 'invalid' }[] }[];
};

describe('receipt signature verifiers', () => {
  test('this repository installs sodium-native, so receipts are verified by libsodium first, then node:crypto, then Web Crypto', () => {
    assert.deepEqual(ed25519Verifiers(), ['libsodium', 'node:crypto', 'web-crypto']);
  });

  for (const verifier of ['libsodium', 'node:crypto', 'web-crypto'] satisfies Ed25519Verifier[]) {
    test(`${verifier}: every Wycheproof Ed25519 vector gets its verdict`, async () => {
      let count = 0;
      for (const group of suite.testGroups) {
        const key = await importKey(Buffer.from(group.publicKey.pk, 'hex'), verifier);
        for (const vector of group.tests) {
          const verdict = await key.verify(Buffer.from(vector.sig, 'hex'), Buffer.from(vector.msg, 'hex'));
          assert.equal(verdict, vector.result === 'valid', `tcId ${vector.tcId}: ${vector.comment}`);
          count += 1;
        }
      }
      assert.equal(count, suite.numberOfTests);
    });
  }

  test('verifyReceipt (libsodium here) accepts a signed receipt and refuses it with one field changed', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    const unsigned = {
      v: 1,
      requestId: 'req_1',
      action: 'payments.transfer',
      argsDigest: '0'.repeat(64),
      decision: 'approved',
      decidedBy: { user: 'ada' },
      policyId: null,
      issuedAt: '2026-11-29T18:00:00.000Z',
      expiresAt: '2026-11-29T18:10:00.000Z',
      nonce: 'n1',
      keyId: await receiptKeyId(raw),
    };
    const signature = sign(null, Buffer.from(canonicalJson(unsigned)), privateKey).toString('base64url');
    assert.equal(await verifyReceipt({ ...unsigned, signature }, raw), true);
    assert.equal(await verifyReceipt({ ...unsigned, action: 'payments.refund', signature }, raw), false);
  });
});
