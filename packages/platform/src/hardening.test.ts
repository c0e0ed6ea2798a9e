// Kernel pieces the hostile-input and dependency-fault suites (packages/cli) rely on, pinned on
// their own: the JSON body check, the reading of database failures, the group committer under a
// lost connection. (The deployment guide's list of every variable is checked in packages/cli/src/config.test.ts.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { databaseFailure } from './db.ts';
import { GroupCommitter } from './group-commit.ts';
import { urlForLog } from './http.ts';
import { jsonValueProblem, MAX_JSON_DEPTH } from './text.ts';

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

test('jsonValueProblem: nesting up to MAX_JSON_DEPTH passes, deeper is refused without recursing further', () => {
  assert.equal(jsonValueProblem(nested(MAX_JSON_DEPTH)), null);
  const problem = jsonValueProblem(nested(MAX_JSON_DEPTH + 1));
  assert.equal(problem?.message, `nesting is deeper than ${MAX_JSON_DEPTH} levels`);
  assert.equal(problem?.path.length, MAX_JSON_DEPTH);
  // 200,000 levels: no stack overflow (JSON.parse builds it; the check stops at the limit).
  const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`);
  assert.equal(jsonValueProblem(deep)?.message, `nesting is deeper than ${MAX_JSON_DEPTH} levels`);
});

test('jsonValueProblem: numbers beyond the double range, U+0000 and lone surrogates are named with their path', () => {
  assert.deepEqual(jsonValueProblem(JSON.parse('{"a":[1,{"b":1e400}]}')), {
    path: ['a', 1, 'b'],
    message: 'number is out of range (beyond ±1.7976931348623157e308)',
  });
  assert.deepEqual(jsonValueProblem({ x: 'ok', y: ['a\u0000'] })?.path, ['y', 0]);
  assert.deepEqual(jsonValueProblem({ ['k\ud800']: 1 })?.path, ['k\ud800']);
  assert.equal(jsonValueProblem({ n: -0, m: 5e-324, big: 1.7976931348623157e308, s: '\ud83d\ude00' }), null);
});

test('jsonValueProblem: any JSON text of storable strings within the depth limit passes', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
      const text = JSON.stringify(value);
      const storable = !/\\u0000|\u0000/.test(text);
      assert.equal(jsonValueProblem(JSON.parse(text)) === null, storable);
    }),
    { seed: 20_261_122, numRuns: 300 },
  );
});

test('databaseFailure: a lost or unobtainable PostgreSQL connection is `unavailable` (503), whatever node-postgres calls it', () => {
  const withCode = (code: string) => Object.assign(new Error('x'), { code });
  for (const error of [
    withCode('ECONNREFUSED'),
    withCode('ECONNRESET'),
    withCode('57P01'),
    withCode('08006'),
    new Error('Connection terminated unexpectedly'),
    new Error('Connection terminated due to connection timeout'),
    new Error('Client has encountered a connection error and is not queryable'),
    new Error('timeout exceeded when trying to connect'),
  ]) {
    assert.equal(databaseFailure(error), 'unavailable', error.message);
  }
  assert.equal(databaseFailure(withCode('23505')), 'storage');
  assert.equal(databaseFailure(new Error('something else')), undefined);
  assert.equal(databaseFailure(null), undefined);
});

test('GroupCommitter: a group that lost its connection fails as a whole and is not retried item by item', async () => {
  const calls: number[][] = [];
  const committer = new GroupCommitter<number, number>(
    async (items) => {
      calls.push(items);
      if (items.length > 1) throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      return items;
    },
    { maxInFlight: 1, maxGroupSize: 100 },
  );
  const outcomes = await Promise.allSettled([committer.submit(1), committer.submit(2), committer.submit(3)]);
  assert.deepEqual(calls, [[1, 2, 3]], 'one attempt: a COMMIT that reached the server before the drop must not be repeated');
  assert.ok(outcomes.every((o) => o.status === 'rejected' && (o.reason as { code?: string }).code === 'ECONNRESET'));

  // Any other failure of a group still isolates the item at fault.
  const isolated = new GroupCommitter<number, number>(
    async (items) => {
      if (items.includes(2)) throw Object.assign(new Error('duplicate'), { code: '23505' });
      return items;
    },
    { maxInFlight: 1, maxGroupSize: 100 },
  );
  const mixed = await Promise.allSettled([isolated.submit(1), isolated.submit(2), isolated.submit(3)]);
  assert.deepEqual(
    mixed.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
});

test('urlForLog: a token in the query string never reaches the logs; the rest of the URL does', () => {
  assert.equal(urlForLog('/api/stream?sessionId=s-1&token=vst_secret&include=events'), '/api/stream?sessionId=s-1&token=[redacted]&include=events');
  assert.equal(urlForLog('/api/stream?TOKEN=vst_secret'), '/api/stream?TOKEN=[redacted]');
  assert.equal(urlForLog('/api/sessions?tokens=2'), '/api/sessions?tokens=2');
});
