// The gate error catalogue: the specification names one code per status for 400, 401, 403, 404,
// 409, 429 and 500 (document 3, "Errors"), kept to the letter; every other code belongs to one error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gateErrors } from './errors.ts';

/** The codes the gate's specification names, by status. */
const SPEC_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  429: 'rate_limited',
  500: 'internal_error',
};

test("every gate error of a status the specification names answers that status's code", () => {
  for (const [key, spec] of Object.entries(gateErrors)) {
    const named = SPEC_CODES[spec.status];
    if (named !== undefined) assert.equal(spec.code, named, `${key} (${spec.status})`);
  }
});

test('every other gate code belongs to one error, and no error of another status takes a code the specification names', () => {
  const owners = new Map<string, string[]>();
  for (const [key, spec] of Object.entries(gateErrors)) {
    assert.match(spec.code, /^[a-z]+(_[a-z]+)*$/, `${key}: code ${spec.code}`);
    if (SPEC_CODES[spec.status] === undefined) {
      assert.ok(!Object.values(SPEC_CODES).includes(spec.code), `${key} (${spec.status}) takes the specification's ${spec.code}`);
      owners.set(spec.code, [...(owners.get(spec.code) ?? []), key]);
    }
  }
  const shared = [...owners].filter(([, keys]) => keys.length > 1).map(([code, keys]) => `${code}: ${keys.join(', ')}`);
  assert.deepEqual(shared, [], 'codes used by more than one error');
});
