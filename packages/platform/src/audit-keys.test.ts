import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { rawPublicKey, signBytes, verifyBytes, type SigningKey } from './audit-keys.ts';
import { decodeBase64 } from './crypto.ts';

function newKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey: rawPublicKey(privateKey), keyId: '' };
}

test('decodeBase64 takes the one canonical spelling of standard, padded base64', () => {
  assert.deepEqual(decodeBase64(''), Buffer.alloc(0));
  assert.deepEqual(decodeBase64('AAECAw=='), Buffer.from([0, 1, 2, 3]));
  assert.deepEqual(decodeBase64('+/+/'), Buffer.from([0xfb, 0xff, 0xbf]));
  for (const spelling of ['AAECAw', 'AAECAw=', 'AAECAw===', 'AAECAx==', 'AAEC Aw==', 'AAECAw==\n', ' AAECAw==', '-_-_', 'AA=CAw==', 'AAECAw==AA==', 'AAE']) {
    assert.equal(decodeBase64(spelling), null, JSON.stringify(spelling));
  }
});

test('a signature verifies in its canonical base64 only: no other spelling of the same bytes', () => {
  const key = newKey();
  const message = Buffer.from('checkpoint bytes');
  const signature = signBytes(key, message);
  assert.ok(verifyBytes(message, signature, key.publicKey));
  const bytes = Buffer.from(signature, 'base64');
  const unpadded = signature.replace(/=+$/, '');
  // 64 bytes end in 4 spare bits: a different last character with the same first 2 bits decodes alike.
  const last = unpadded.at(-1)!;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const sloppyLast = alphabet[alphabet.indexOf(last) ^ 1]!;
  const spellings = [
    unpadded,
    `${signature}=`,
    bytes.toString('base64url'),
    `${signature}\n`,
    ` ${signature}`,
    `${signature.slice(0, 40)}\n${signature.slice(40)}`,
    `${unpadded.slice(0, -1)}${sloppyLast}==`,
  ];
  for (const spelling of spellings) {
    if (spelling === signature) continue;
    assert.equal(verifyBytes(message, spelling, key.publicKey), false, JSON.stringify(spelling));
  }
  assert.equal(Buffer.from(`${unpadded.slice(0, -1)}${sloppyLast}==`, 'base64').equals(bytes), true, 'the sloppy spelling decodes to the same bytes');
});

test('a public key of any length but 32 bytes verifies nothing', () => {
  const key = newKey();
  const message = Buffer.from('m');
  const signature = signBytes(key, message);
  assert.equal(verifyBytes(message, signature, Buffer.concat([key.publicKey, Buffer.alloc(1)])), false);
  assert.equal(verifyBytes(message, signature, key.publicKey.subarray(0, 31)), false);
});
