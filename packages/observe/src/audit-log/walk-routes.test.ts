import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { headBucketOf, headEntryText, headInBucket, leafHash, parseHeadsLeaf, sha256Hex, verifyInclusion, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, assertErrorBody, custom, ingestEvents, insertEventCopy, started, startTestObserve, type EventAck, type TestObserve } from '../testing.ts';

interface Bundle {
  format: string;
  log: string;
  sessionId: string;
  head: { seq: number; hash: string | null };
  events: string[];
  leaves: ({ index: number; proof: string[] } | null)[];
  checkpoint: Checkpoint;
  publicKey: string;
  consistency?: { from: number; to: number; proof: string[] };
  heads?: { treeSize: number; leafIndex: number; leaf: string; proof: string[]; bucket: number; entries: string[]; path: string[] };
  exportedAt: string;
}

interface LeafPage {
  treeSize: number;
  leaves: {
    index: number;
    leafHash: string;
    sessionId: string | null;
    eventId: string | null;
    event: string | null;
    tombstone: unknown;
    change?: string | null;
    writtenBy?: string | null;
    kind?: string | null;
    heads?: string;
  }[];
}

await describeEachDatabase('audit walk routes', (backend) => {
  let observe: TestObserve;
  let acks: EventAck[] = [];

  before(async () => {
    observe = await startTestObserve(backend);
    acks = await ingestEvents(observe, [
      started('w-1', 'agent', ago(9)),
      custom('w-2', 'agent', ago(8)),
      custom('w-1', 'agent', ago(7)),
      custom('w-1', 'agent', ago(6)),
      started('w-3', 'agent', ago(5)),
    ]);
  });
  after(() => observe.close());

  const get = async <T>(url: string): Promise<T> => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    return response.json() as T;
  };

  test('the export is the session in seq order, each event text hashing to its chain hash, with proofs to a checkpoint signed for it', async () => {
    const bundle = await get<Bundle>('/api/audit/export?sessionId=w-1');
    assert.equal(bundle.format, 'vigil-audit-bundle/1');
    assert.equal(bundle.log, 'vigil-observe');
    const own = [acks[0]!, acks[2]!, acks[3]!];
    assert.deepEqual(
      bundle.events.map((text) => sha256Hex(text)),
      own.map((ack) => ack.hash),
    );
    assert.deepEqual(
      bundle.events.map((text) => (JSON.parse(text) as { seq: number }).seq),
      [0, 1, 2],
    );
    assert.deepEqual(bundle.head, { seq: 2, hash: acks[3]!.hash });
    // No checkpoint existed: the export signed one covering the session (leaf 0 logs the first key's
    // creation; the five events follow, then their batch's writer leaf, and the heads leaf ends it).
    assert.equal(bundle.checkpoint.treeSize, 8);
    // The session's head as that heads leaf commits it: the leaf, its proof, the session's bucket whole and its path to the map root.
    const heads = bundle.heads!;
    assert.deepEqual([heads.treeSize, heads.leafIndex], [8, 7]);
    assert.ok(
      verifyInclusion(
        7,
        8,
        leafHash(Buffer.from(heads.leaf, 'utf8')),
        heads.proof.map((h) => Buffer.from(h, 'hex')),
        Buffer.from(bundle.checkpoint.rootHash, 'hex'),
      ),
    );
    assert.equal(heads.bucket, headBucketOf('w-1'));
    assert.ok(heads.entries.includes(headEntryText('w-1', { seq: 2, hash: acks[3]!.hash })));
    const committed = headInBucket(
      'w-1',
      heads.bucket,
      heads.entries,
      heads.path.map((h) => Buffer.from(h, 'hex')),
      parseHeadsLeaf(heads.leaf, 'vigil-observe')!,
    );
    assert.deepEqual(committed, { seq: 2, hash: acks[3]!.hash });
    const root = Buffer.from(bundle.checkpoint.rootHash, 'hex');
    bundle.leaves.forEach((leaf, i) => {
      assert.ok(leaf !== null);
      assert.ok(
        verifyInclusion(
          leaf.index,
          bundle.checkpoint.treeSize,
          leafHash(Buffer.from(own[i]!.hash, 'hex')),
          leaf.proof.map((h) => Buffer.from(h, 'hex')),
          root,
        ),
      );
    });
    const key = await get<{ publicKey: string; keyId: string }>('/api/audit/public-key');
    assert.equal(bundle.publicKey, key.publicKey);
    assert.equal(bundle.consistency, undefined);

    const since = await get<Bundle>('/api/audit/export?sessionId=w-1&since=2');
    assert.deepEqual({ from: since.consistency!.from, to: since.consistency!.to }, { from: 2, to: 8 });
    // Since a tree that does not end with a heads leaf: nothing to prove the session's head by.
    assert.equal(since.heads, undefined);
  });

  test('an unknown session is a 404, a since past the checkpoint a 400', async () => {
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/audit/export?sessionId=nobody' }), 404);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/audit/export?sessionId=w-1&since=999' }), 400);
  });

  test('leaves come in index order, a page at a time, each with its session and event text; a change leaf with its row', async () => {
    const first = await get<LeafPage>('/api/audit/leaves?from=0&limit=2');
    const second = await get<LeafPage>('/api/audit/leaves?from=2&limit=1000');
    assert.equal(first.treeSize, 8);
    const [change, ...all] = [...first.leaves, ...second.leaves];
    // The last is the heads leaf the export's checkpoint ended with: no session, its data as `heads`.
    const headsLeaf = all.pop()!;
    assert.deepEqual([headsLeaf.index, headsLeaf.sessionId, headsLeaf.kind], [7, null, 'heads']);
    assert.equal(headsLeaf.leafHash, leafHash(Buffer.from(headsLeaf.heads!, 'utf8')).toString('hex'));
    assert.equal(parseHeadsLeaf(headsLeaf.heads!, 'vigil-observe')?.treeSize, 7);
    // Leaf 0 logs the first key's creation: no session, its change row's text, whose SHA-256 is the leaf's data.
    const [row] = (await get<{ entries: { id: string }[] }>('/api/audit/changes')).entries;
    assert.deepEqual([change!.sessionId, change!.eventId, change!.event], [null, row!.id, null]);
    assert.equal(change!.leafHash, leafHash(Buffer.from(sha256Hex(change!.change!), 'hex')).toString('hex'));
    assert.ok(all.every((leaf) => leaf.change === undefined));
    assert.deepEqual(
      all.map((leaf) => leaf.index),
      [1, 2, 3, 4, 5, 6],
    );
    // The last is the batch's writer leaf: no session, its data (canonical JSON naming the key and the events' hashes) as its text.
    const writer = all.pop()!;
    assert.equal(writer.sessionId, null);
    assert.equal(writer.writtenBy, null);
    assert.deepEqual(JSON.parse(writer.event!), {
      events: acks.map((ack) => ack.hash),
      kind: 'event-writer',
      log: 'vigil-observe',
      v: 1,
      writtenBy: observe.keyWriter,
    });
    assert.equal(writer.leafHash, leafHash(Buffer.from(writer.event!, 'utf8')).toString('hex'));
    const leaves = all;
    assert.ok(leaves.every((leaf) => leaf.writtenBy === observe.keyWriter));
    assert.deepEqual(
      leaves.map((leaf) => leaf.sessionId),
      ['w-1', 'w-2', 'w-1', 'w-1', 'w-3'],
    );
    assert.deepEqual(
      leaves.map((leaf) => leaf.eventId),
      acks.map((ack) => ack.id),
    );
    assert.deepEqual(
      leaves.map((leaf) => sha256Hex(leaf.event!)),
      acks.map((ack) => ack.hash),
    );
    assert.deepEqual(
      leaves.map((leaf) => leaf.leafHash),
      acks.map((ack) => leafHash(Buffer.from(ack.hash, 'hex')).toString('hex')),
    );
    assert.ok(leaves.every((leaf) => leaf.tombstone === null));
  });

  test('heads page by session id; unlogged lists an event written around the service', async () => {
    const page1 = await get<{ sessions: { sessionId: string; headSeq: number; headHash: string | null }[]; nextCursor: string | null }>(
      '/api/audit/heads?limit=2',
    );
    assert.deepEqual(
      page1.sessions.map((s) => s.sessionId),
      ['w-1', 'w-2'],
    );
    assert.equal(page1.nextCursor, 'w-2');
    const page2 = await get<typeof page1>(`/api/audit/heads?limit=2&after=${page1.nextCursor}`);
    assert.deepEqual(page2, { sessions: [{ sessionId: 'w-3', headSeq: 0, headHash: acks[4]!.hash }], nextCursor: null });
    assert.deepEqual(page1.sessions[0], { sessionId: 'w-1', headSeq: 2, headHash: acks[3]!.hash });

    assert.deepEqual(await get('/api/audit/unlogged'), { events: [], nextCursor: null });
    await insertEventCopy(observe.service.context.database, acks[4]!.id, { id: 'zz-copy-1', seq: 1 });
    await insertEventCopy(observe.service.context.database, acks[4]!.id, { id: 'zz-copy-2', seq: 2 });
    const unlogged = await get<{ events: unknown[]; nextCursor: string | null }>('/api/audit/unlogged?limit=1');
    assert.deepEqual(unlogged, { events: [{ sessionId: 'w-3', seq: 1, eventId: 'zz-copy-1' }], nextCursor: 'zz-copy-1' });
    assert.deepEqual(await get(`/api/audit/unlogged?limit=1&cursor=zz-copy-1`), {
      events: [{ sessionId: 'w-3', seq: 2, eventId: 'zz-copy-2' }],
      nextCursor: 'zz-copy-2',
    });

    // The export lists them too (every stored event), without a leaf: the verifier is the judge.
    const bundle = await get<Bundle>('/api/audit/export?sessionId=w-3');
    assert.equal(bundle.events.length, 3);
    assert.deepEqual(
      bundle.leaves.map((leaf) => leaf?.index ?? null),
      [5, null, null],
    );
    assert.deepEqual(bundle.head, { seq: 0, hash: acks[4]!.hash });
  });

  test('a read key reads them all, like GET /api/audit/verify', async () => {
    const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'reader', scopes: ['read'] } });
    assert.equal(created.statusCode, 201, created.body);
    const reader = created.json<{ key: string }>().key;
    for (const url of ['/api/audit/verify?sessionId=w-1', '/api/audit/export?sessionId=w-1', '/api/audit/leaves', '/api/audit/unlogged', '/api/audit/heads']) {
      const response = await observe.service.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${reader}` } });
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    }
  });
});
