// The observe error catalogue: one code per error (programs branch on it), each answered in the body.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { observeError, observeErrors, observeErrorSchema, renderObserveError, type ObserveErrorKey } from './errors.ts';

test('every observe error has its own snake_case code', () => {
  const owners = new Map<string, string[]>();
  for (const [key, spec] of Object.entries(observeErrors)) {
    assert.match(spec.code, /^[a-z]+(_[a-z]+)*$/, `${key}: code ${spec.code}`);
    owners.set(spec.code, [...(owners.get(spec.code) ?? []), key]);
  }
  const shared = [...owners].filter(([, keys]) => keys.length > 1).map(([code, keys]) => `${code}: ${keys.join(', ')}`);
  assert.deepEqual(shared, [], 'codes used by more than one error');
});

test('the body carries the code beside the message and status, and the documented schema takes every error', () => {
  for (const key of Object.keys(observeErrors) as ObserveErrorKey[]) {
    const body = renderObserveError(observeError(key));
    assert.deepEqual(body, { error: observeErrors[key].message, code: observeErrors[key].code, status: observeErrors[key].status });
    assert.equal(observeErrorSchema.safeParse(body).success, true, key);
  }
  const withDetails = renderObserveError(observeError('validation', 'Validation failed in body: name: required', [{ path: 'name', message: 'required' }]));
  assert.deepEqual(withDetails, {
    error: 'Validation failed in body: name: required',
    code: 'validation_error',
    status: 400,
    details: [{ path: 'name', message: 'required' }],
  });
});
