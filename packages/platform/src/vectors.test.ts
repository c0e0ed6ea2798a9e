// Test vectors written by others (vectors/README.md gives each source, commit and licence), run
// through the functions the services and `vigil verify` use: every vector gets exactly its own
// verdict, except the few our format cannot express, each listed with the reason.
import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { verifyBytes } from './audit-keys.ts';
import { canonicalJson } from './crypto.ts';
import { verifyConsistency, verifyInclusion } from './merkle.ts';

const VECTORS = join(import.meta.dirname, 'vectors');

function jsonFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => join(dir, name));
}

/** The vectors' hashes are Go []byte in JSON: standard base64, null for none. */
const bytes = (base64: string | null): Buffer => Buffer.from(base64 ?? '', 'base64');

describe('transparency-dev/merkle proof vectors (RFC 9162 inclusion and consistency)', () => {
  const root = join(VECTORS, 'transparency-dev-merkle', 'testdata');
  /**
   * Vectors whose verdict ours differs from, by design. Vigil's tree hashes are SHA-256, 32 bytes
   * each: a hash of any other length is refused before any comparison, so these vectors, which
   * expect success from placeholder roots ("don't care 2", 12 bytes) at equal sizes, fail here.
   */
  const REFUSED_BY_LENGTH = new Set(['consistency/additional/sizes-are-equal-one-and-proof-is-empty.json']);

  for (const kind of ['inclusion', 'consistency'] as const) {
    test(`every ${kind} vector gets its verdict`, () => {
      const files = jsonFilesUnder(join(root, kind));
      assert.equal(files.length, 98);
      for (const file of files) {
        const name = relative(root, file);
        const v = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
        const proof = ((v.proof as string[] | null) ?? []).map(bytes);
        const verdict =
          kind === 'inclusion'
            ? verifyInclusion(v.leafIdx as number, v.treeSize as number, bytes(v.leafHash as string), proof, bytes(v.root as string))
            : verifyConsistency(v.size1 as number, v.size2 as number, bytes(v.root1 as string), bytes(v.root2 as string), proof);
        const expected = REFUSED_BY_LENGTH.has(name) ? false : !(v.wantErr as boolean);
        assert.equal(verdict, expected, `${name} (${String(v.desc)})`);
      }
    });
  }
});

describe('cyberphone/json-canonicalization (RFC 8785)', () => {
  const testdata = join(VECTORS, 'json-canonicalization', 'testdata');

  test('every input file canonicalises to its output file, byte for byte', () => {
    const names = readdirSync(join(testdata, 'input')).sort();
    assert.equal(names.length, 6);
    for (const name of names) {
      const input: unknown = JSON.parse(readFileSync(join(testdata, 'input', name), 'utf8'));
      assert.equal(canonicalJson(input), readFileSync(join(testdata, 'output', name), 'utf8'), name);
    }
  });

  /** The README's "hex-ieee,expected" sample lines. */
  test('the README sample numbers serialise as listed', () => {
    const readme = readFileSync(join(testdata, 'README.md'), 'utf8');
    const samples = [...readme.matchAll(/^([0-9a-f]{1,16}),(\S+)$/gm)];
    assert.equal(samples.length, 7);
    for (const [, hex, expected] of samples) assert.equal(canonicalJson(doubleOf(BigInt(`0x${hex}`))), expected, hex);
  });

  /**
   * The README's deterministic number sequence (its algorithm, written here from its description:
   * the listed static values, 2,000 serial ones, then doubles from chained SHA-256 blocks), each
   * line "hex,canonical" ending in a new line: the first 10,000 lines must hash to the checksum
   * the README records for them.
   */
  test('the first 10,000 lines of the ES6 number file hash to the recorded checksum', () => {
    const readme = readFileSync(join(testdata, 'README.md'), 'utf8');
    const staticBlock = /staticU64s = new BigUint64Array\(\[([^\]]*)\]\)/.exec(readme)![1]!;
    const staticValues = [...staticBlock.matchAll(/0x([0-9a-f]{16})n/g)].map(([, hex]) => BigInt(`0x${hex}`));
    const recorded = /^\| ([0-9a-f]{64}) \| 10000 /m.exec(readme)![1]!;
    const lines: string[] = [];
    let block = Buffer.alloc(32);
    let pending: bigint[] = [];
    for (let index = 0; lines.length < 10_000; index += 1) {
      let bits: bigint;
      if (index < staticValues.length) bits = staticValues[index]!;
      else if (index < staticValues.length + 2000) bits = 0x0010000000000000n + BigInt(index - staticValues.length);
      else {
        for (;;) {
          if (pending.length === 0) {
            block = hash('sha256', block, 'buffer');
            pending = [0, 8, 16, 24].map((at) => block.readBigUInt64LE(at));
          }
          const candidate = pending.shift()!;
          const value = doubleOf(candidate);
          if (value !== 0 && Number.isFinite(value)) {
            bits = candidate;
            break;
          }
        }
      }
      lines.push(`${bits.toString(16)},${canonicalJson(doubleOf(bits))}\n`);
    }
    assert.equal(hash('sha256', lines.join(''), 'hex'), recorded);
  });
});

function doubleOf(bits: bigint): number {
  const buffer = Buffer.alloc(8);
  buffer.writeBigUInt64LE(bits);
  return buffer.readDoubleLE(0);
}

describe("Wycheproof's Ed25519 vectors", () => {
  test('every signature gets its verdict through verifyBytes (checkpoints, tombstones)', () => {
    const suite = JSON.parse(readFileSync(join(VECTORS, 'wycheproof', 'ed25519_test.json'), 'utf8')) as {
      numberOfTests: number;
      testGroups: { publicKey: { pk: string }; tests: { tcId: number; comment: string; msg: string; sig: string; result: 'valid' | 'invalid' }[] }[];
    };
    let count = 0;
    for (const group of suite.testGroups) {
      const publicKey = Buffer.from(group.publicKey.pk, 'hex');
      for (const vector of group.tests) {
        // Signatures travel as base64 (docs/audit.md): the vector's bytes in that spelling.
        const signature = Buffer.from(vector.sig, 'hex').toString('base64');
        assert.equal(verifyBytes(Buffer.from(vector.msg, 'hex'), signature, publicKey), vector.result === 'valid', `tcId ${vector.tcId}: ${vector.comment}`);
        count += 1;
      }
    }
    assert.equal(count, suite.numberOfTests);
    assert.equal(count, 151);
  });
});
