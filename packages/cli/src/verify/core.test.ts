import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { inclusionProof, leafHash, nodeHash, rootOf, verifyInclusion } from '@vigil/platform';
import { checkConsistency, parseBundle, verifyBundle } from './bundle.ts';
import { chainEvent, MemoryLog, sha256, testKey } from './fixture.ts';
import { parsePublicKey } from './checkpoint.ts';
import { InputError } from './input.ts';
import { LogWalk, type RecordedHead } from './walk.ts';
import { InclusionBatch, StreamingRoot } from './tree.ts';

const leaves = (n: number, salt = 0): Buffer[] => Array.from({ length: n }, (_, i) => leafHash(sha256(`leaf ${salt}:${i}`)));

/** Perfect-subtree reader over all leaves (the naive way), for inclusionProof. */
function reader(hashes: Buffer[]): (level: number, index: number) => Buffer {
  return (level, index) => rootOf(hashes.slice(index * 2 ** level, (index + 1) * 2 ** level));
}

function checks(findings: { check: string }[]): string[] {
  return findings.map((finding) => finding.check);
}

function json<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('streaming root', () => {
  test('equals the RFC 9162 root of every size up to 70', () => {
    const all = leaves(70);
    const stream = new StreamingRoot();
    assert.deepEqual(stream.root(), rootOf([]));
    all.forEach((leaf, i) => {
      stream.add(leaf);
      assert.deepEqual(stream.root(), rootOf(all.slice(0, i + 1)), `size ${i + 1}`);
    });
  });

  test('equals the RFC root of random trees (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1500 }), fc.integer(), (n, salt) => {
        const all = leaves(n, salt);
        const stream = new StreamingRoot();
        all.forEach((leaf) => stream.add(leaf));
        return stream.root().equals(rootOf(all));
      }),
      { numRuns: 40 },
    );
  });
});

describe('batched inclusion proofs', () => {
  test('accepts every correct proof and only the true leaf, in any order, whatever the proof says (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.array(fc.record({ at: fc.nat(), leafFlip: fc.boolean(), pathFlip: fc.option(fc.nat(), { nil: undefined }), truncate: fc.boolean() }), {
          minLength: 1,
          maxLength: 60,
        }),
        (size, attempts) => {
          const all = leaves(size, size);
          const read = reader(all);
          const root = rootOf(all);
          const batch = new InclusionBatch(size, root);
          for (const attempt of attempts) {
            const index = attempt.at % size;
            const proof = inclusionProof(index, size, read);
            let leaf = all[index]!;
            if (attempt.leafFlip) leaf = sha256(leaf);
            if (attempt.pathFlip !== undefined && proof.length > 0) proof[attempt.pathFlip % proof.length] = sha256(proof[attempt.pathFlip % proof.length]!);
            if (attempt.truncate && proof.length > 0) proof.pop();
            const accepted = batch.verify(
              index,
              leaf,
              proof.map((hash) => hash.toString('hex')),
            );
            const expected = verifyInclusion(index, size, leaf, proof, root);
            // Sound: never a leaf that is not there. Complete: every proof the RFC accepts.
            if (accepted && !leaf.equals(all[index]!)) return false;
            if (expected && !accepted) return false;
            if (accepted && inclusionProof(index, size, read).length !== proof.length) return false;
          }
          return true;
        },
      ),
      { numRuns: 150 },
    );
  });

  test('rejects an index outside the tree, and a proof of the right leaf for another index', () => {
    const all = leaves(9);
    const read = reader(all);
    const batch = new InclusionBatch(9, rootOf(all));
    const proof3 = inclusionProof(3, 9, read).map((hash) => hash.toString('hex'));
    assert.equal(batch.verify(3, all[3]!, proof3), true);
    assert.equal(batch.verify(9, all[3]!, proof3), false);
    assert.equal(batch.verify(2, all[3]!, proof3), false);
    assert.equal(batch.verify(-1, all[3]!, proof3), false);
  });
});

describe('bundle verification', () => {
  function logWithSession(count = 12): MemoryLog {
    const log = new MemoryLog();
    log.append('other', 3);
    for (let i = 0; i < count; i += 1) {
      log.append('s1', 1);
      if (i % 4 === 0) log.append('other', 1);
    }
    return log;
  }

  test('a genuine bundle has no findings, and says the key was taken from the bundle', () => {
    const log = logWithSession();
    const bundle = parseBundle(json({ format: 'vigil-audit-bundle/1', ...log.bundle('s1'), exportedAt: 'now' }));
    const verdict = verifyBundle(bundle);
    assert.deepEqual(verdict.findings, []);
    assert.equal(verdict.eventCount, 12);
    assert.match(verdict.notes.join('\n'), /taken from the bundle/);
    assert.deepEqual(verifyBundle(bundle, log.key.publicKey).notes, []);
  });

  test('an empty session verifies with a null head', () => {
    const log = logWithSession();
    const bundle = log.bundle('nobody');
    assert.deepEqual(bundle.head, { seq: -1, hash: null });
    assert.deepEqual(verifyBundle(bundle).findings, []);
  });

  test('an edited event is named by seq, event id and leaf index', () => {
    const bundle = logWithSession().bundle('s1');
    bundle.events[5] = bundle.events[5]!.replace('"n":5', '"n":50');
    const { findings } = verifyBundle(bundle);
    const inclusion = findings.find((finding) => finding.check === 'inclusion')!;
    assert.equal(inclusion.seq, 5);
    assert.equal(inclusion.eventId, 's1-e5');
    assert.equal(inclusion.leafIndex, bundle.leaves[5]!.index);
    assert.equal(inclusion.sessionId, 's1');
    // The next event's prevHash no longer matches what the edited one hashes to.
    assert.ok(findings.some((finding) => finding.check === 'prev-hash' && finding.seq === 6));
  });

  test('swapped events break seq order and their inclusion', () => {
    const bundle = logWithSession().bundle('s1');
    [bundle.events[3], bundle.events[4]] = [bundle.events[4]!, bundle.events[3]!];
    const { findings } = verifyBundle(bundle);
    assert.ok(findings.some((finding) => finding.check === 'seq' && finding.eventId === 's1-e4'));
    assert.ok(findings.some((finding) => finding.check === 'inclusion' && finding.seq === 4 && finding.leafIndex === bundle.leaves[3]!.index));
  });

  test('an event without a leaf, a missing event and a truncated tail are each named', () => {
    const noLeaf = logWithSession().bundle('s1');
    noLeaf.leaves[7] = null;
    assert.deepEqual(
      verifyBundle(noLeaf).findings.map((f) => [f.check, f.seq]),
      [['not-logged', 7]],
    );

    const gap = logWithSession().bundle('s1');
    gap.events.splice(2, 1);
    gap.leaves.splice(2, 1);
    const gapFindings = verifyBundle(gap).findings;
    assert.deepEqual(checks(gapFindings), ['seq', 'prev-hash']);
    assert.match(gapFindings[0]!.message, /seq 2 is missing/);

    const tail = logWithSession().bundle('s1');
    tail.events.pop();
    tail.leaves.pop();
    const tailFindings = verifyBundle(tail).findings;
    assert.deepEqual(checks(tailFindings), ['head']);
    assert.match(tailFindings[0]!.message, /missing at the end/);
  });

  test('a bad signature, and a bundle key other than the trusted one', () => {
    const log = logWithSession();
    const forged = log.bundle('s1');
    forged.checkpoint.timestamp = '2030-01-01T00:00:00.000Z';
    assert.deepEqual(checks(verifyBundle(forged).findings), ['checkpoint-signature']);

    // Re-signed by another key, which the bundle carries: fine alone, caught against the trusted key.
    const other = testKey();
    const resigned = log.bundle('s1');
    resigned.checkpoint = log.checkpoint(undefined, other);
    resigned.publicKey = other.publicKey.toString('base64');
    assert.deepEqual(verifyBundle(resigned).findings, []);
    assert.deepEqual(checks(verifyBundle(resigned, log.key.publicKey).findings), ['public-key', 'checkpoint-signature']);
  });

  test('consistency with a saved checkpoint: older, equal, forked', () => {
    const log = logWithSession();
    const saved = log.checkpoint();
    log.append('s1', 5);
    const bundle = log.bundle('s1', saved.treeSize);
    assert.equal(checkConsistency(saved, bundle.checkpoint, bundle.consistency!.proof), undefined);
    assert.equal(checkConsistency(bundle.checkpoint, saved, bundle.consistency!.proof), undefined);
    assert.equal(checkConsistency(bundle.checkpoint, bundle.checkpoint, []), undefined);

    // A log rebuilt with one event changed: same sizes, different roots.
    const forked = new MemoryLog(log.key);
    forked.append('other', 3);
    forked.append('s1', 30);
    const fork = forked.checkpoint(saved.treeSize);
    assert.equal(checkConsistency(fork, saved, [])?.check, 'consistency');
    assert.equal(checkConsistency(fork, bundle.checkpoint, log.consistency(saved.treeSize, bundle.checkpoint.treeSize))?.check, 'consistency');
  });

  test('a file that is not a v1 bundle is an input error, not a finding', () => {
    const good = json({ format: 'vigil-audit-bundle/1', ...logWithSession().bundle('s1') });
    for (const broken of [
      null,
      [],
      { ...good, format: 'x' },
      { ...good, log: 'vigil-gate' },
      { ...good, leaves: [] },
      { ...good, checkpoint: { treeSize: -1 } },
      { ...good, head: { seq: 'x' } },
    ]) {
      assert.throws(() => parseBundle(broken), InputError);
    }
  });
});

describe('one spelling of every key, signature and hash', () => {
  test("a bundle's key, a --public-key and a checkpoint's signature in any other base64 spelling are refused", () => {
    const log = new MemoryLog();
    log.append('s1', 3);
    const good = json({ format: 'vigil-audit-bundle/1', ...log.bundle('s1') });
    const key = log.key.publicKey.toString('base64');
    // 32 bytes end in 2 spare bits: the next letter up decodes to the same key.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const sloppy = `${key.slice(0, 42)}${alphabet[alphabet.indexOf(key[42]!) ^ 1]!}=`;
    assert.ok(Buffer.from(sloppy, 'base64').equals(log.key.publicKey));
    const respelled = [key.slice(0, -1), log.key.publicKey.toString('base64url'), `${key.slice(0, 20)}\n${key.slice(20)}`, sloppy];
    for (const spelling of [...respelled, ` ${key}`]) assert.throws(() => parseBundle({ ...good, publicKey: spelling }), InputError, JSON.stringify(spelling));
    for (const spelling of respelled) assert.throws(() => parsePublicKey(spelling, '--public-key'), InputError, JSON.stringify(spelling));
    // A key file ends in a new line: the text around the key is not part of it.
    assert.ok(parsePublicKey(`${key}\n`, 'a key file').equals(log.key.publicKey));
    const unpadded = json(good);
    unpadded.checkpoint.signature = unpadded.checkpoint.signature.replace(/=+$/, '');
    assert.deepEqual(checks(verifyBundle(parseBundle(unpadded)).findings), ['checkpoint-signature']);
  });

  test('an inclusion or consistency proof hash in uppercase or with trailing text proves nothing', () => {
    const log = new MemoryLog();
    log.append('s1', 9);
    const saved = log.checkpoint();
    log.append('s1', 4);
    const bundle = log.bundle('s1', saved.treeSize);
    const upper = json(bundle);
    // The first leaf: later ones stop at nodes an earlier proof established.
    upper.leaves[0]!.proof[0] = upper.leaves[0]!.proof[0]!.toUpperCase();
    assert.deepEqual(checks(verifyBundle(upper).findings), ['inclusion']);
    const proof = bundle.consistency!.proof;
    assert.equal(checkConsistency(saved, bundle.checkpoint, proof), undefined);
    assert.equal(checkConsistency(saved, bundle.checkpoint, [proof[0]!.toUpperCase(), ...proof.slice(1)])?.check, 'consistency');
    assert.equal(checkConsistency(saved, bundle.checkpoint, [`${proof[0]!}zz`, ...proof.slice(1)])?.check, 'consistency');
  });
});

describe('log walk', () => {
  function heads(log: MemoryLog): Map<string, RecordedHead> {
    return new Map([...log.heads].map(([id, head]) => [id, { headSeq: head.seq, headHash: head.hash }]));
  }

  function walk(log: MemoryLog, leaves = log.walked(), recorded = heads(log), checkpoint = log.checkpoint()) {
    const audit = new LogWalk([checkpoint], recorded, new Map([[log.key.keyId, log.key.publicKey]]));
    leaves.forEach((leaf) => audit.add(leaf));
    const summary = audit.finish();
    return { findings: audit.findings, summary };
  }

  function sample(): MemoryLog {
    const log = new MemoryLog();
    for (let round = 0; round < 5; round += 1) for (const session of ['a', 'b', 'c']) log.append(session, round + 1);
    return log;
  }

  test('a genuine log walks clean, leaves past the checkpoint included', () => {
    const log = sample();
    const checkpoint = log.checkpoint();
    log.append('a', 2);
    const { findings, summary } = walk(log, log.walked(), heads(log), checkpoint);
    assert.deepEqual(findings, []);
    assert.equal(summary.leaves, 47);
    assert.equal(summary.sessions, 3);
  });

  test('events whose leaves came out of seq order (backfilled by timestamp) still chain', () => {
    const log = sample();
    const walked = log.walked();
    [walked[0], walked[1]] = [walked[1]!, walked[0]!];
    walked[0]!.index = 0;
    walked[1]!.index = 1;
    // The swap changes the root; only the chain is under test here.
    const chainFindings = walk(log, walked).findings.filter((finding) => finding.check !== 'root');
    assert.deepEqual(chainFindings, []);
  });

  test('an edited event, a deleted event and a head past the log are named', () => {
    const log = sample();
    const walked = log.walked();
    const edited = walked.findIndex((leaf) => leaf.eventId === 'b-e4');
    walked[edited]!.event = walked[edited]!.event!.replace('"n":4', '"n":40');
    const deleted = walked.findIndex((leaf) => leaf.eventId === 'c-e2');
    walked[deleted]!.event = null;
    const recorded = heads(log);
    recorded.set('a', { headSeq: 99, headHash: recorded.get('a')!.headHash });
    const { findings } = walk(log, walked, recorded);
    const byCheck = new Map(findings.map((finding) => [finding.check, finding]));
    assert.deepEqual({ ...byCheck.get('leaf') }, { ...byCheck.get('leaf'), sessionId: 'b', seq: 4, eventId: 'b-e4', leafIndex: edited });
    assert.equal(byCheck.get('event-deleted')?.leafIndex, deleted);
    assert.equal(byCheck.get('event-deleted')?.eventId, 'c-e2');
    assert.equal(byCheck.get('event-deleted')?.seq, 2, 'the seq it had: where its chain stops');
    assert.match(byCheck.get('head')!.message, /session a: its recorded head is seq 99/);
    assert.ok(!byCheck.has('root'));
  });

  test('a whole session deleted is one finding naming it; retention with a tombstone is not a finding', () => {
    const log = sample();
    const walked = log.walked();
    for (const leaf of walked) if (leaf.sessionId === 'b') leaf.event = null;
    const recorded = heads(log);
    recorded.delete('b');
    const { findings } = walk(log, walked, recorded);
    assert.deepEqual(checks(findings), ['session-deleted']);
    assert.equal(findings[0]!.sessionId, 'b');

    // Heads read before a retention run that the walk then sees: still retention.
    const racing = sample();
    const headsBefore = heads(racing);
    racing.retain('b');
    assert.deepEqual(walk(racing, racing.walked(), headsBefore).findings, []);

    const retained = sample();
    retained.retain('b');
    retained.append('a', 1);
    const result = walk(retained);
    assert.deepEqual(result.findings, []);
    assert.equal(result.summary.retained, 15);
    assert.deepEqual(result.summary.retainedSessions, ['b']);
    assert.equal(result.summary.tombstones, 1);
  });

  test('a tombstone that does not match the session, or is not signed, covers nothing', () => {
    const log = sample();
    log.retain('b');
    const walked = log.walked();
    const tombstone = walked.at(-1)!;
    tombstone.tombstone = { ...tombstone.tombstone!, signature: Buffer.alloc(64).toString('base64') };
    assert.deepEqual(new Set(checks(walk(log, walked).findings)), new Set(['tombstone', 'session-deleted']));

    // A leaf of session b removed from the log: the tombstone's count no longer matches.
    const early = sample();
    early.retain('b');
    const dropped = early
      .walked()
      .filter((leaf) => leaf.eventId !== 'b-e0')
      .map((leaf, index) => ({ ...leaf, index }));
    assert.ok(checks(walk(early, dropped).findings).includes('tombstone'));
  });

  test('a chain event forged with a correct link but no leaf leaves the head ahead of the log', () => {
    const log = sample();
    const head = log.heads.get('c')!;
    const forged = chainEvent('c', head.seq + 1, head.hash);
    const recorded = heads(log);
    recorded.set('c', { headSeq: head.seq + 1, headHash: sha256(forged).toString('hex') });
    const { findings } = walk(log, log.walked(), recorded);
    assert.deepEqual(checks(findings), ['head']);
    assert.equal(findings[0]!.seq, head.seq + 1);
  });

  test('the tail cut: the gone events are named by the seqs they had', () => {
    const log = sample();
    const walked = log.walked();
    for (const leaf of walked) if (leaf.eventId === 'a-e13' || leaf.eventId === 'a-e14') leaf.event = null;
    const recorded = heads(log);
    recorded.set('a', { headSeq: 12, headHash: sha256(walked.find((leaf) => leaf.eventId === 'a-e12')!.event!).toString('hex') });
    const { findings } = walk(log, walked, recorded);
    assert.deepEqual(
      findings.map((f) => [f.check, f.seq, f.eventId]),
      [
        ['event-deleted', 13, 'a-e13'],
        ['event-deleted', 14, 'a-e14'],
      ],
    );
  });

  test('the root is recomputed at every checkpoint given: a saved one of another log is caught', () => {
    const log = sample();
    const early = log.checkpoint(10);
    const audit = new LogWalk(
      [log.checkpoint(), { ...early, rootHash: sha256('another log').toString('hex') }],
      heads(log),
      new Map([[log.key.keyId, log.key.publicKey]]),
    );
    log.walked().forEach((leaf) => audit.add(leaf));
    audit.finish();
    assert.deepEqual(
      audit.findings.map((f) => f.message),
      ["the root of the log's first 10 leaves is not the signed checkpoint's: leaves were changed, removed or reordered"],
    );
  });

  test('a leaf removed or changed breaks the root', () => {
    const log = sample();
    const walked = log.walked();
    walked[3]!.leafHash = nodeHash(sha256('x'), sha256('y')).toString('hex');
    assert.ok(checks(walk(log, walked).findings).includes('root'));
    const short = log.walked().slice(0, -1);
    assert.ok(checks(walk(log, short).findings).includes('root'));
  });
});
