// The error reference (docs/reference/errors.md) is derived from the catalogues: an error added,
// renamed or reworded without regenerating the page fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { gateErrors } from '@vigil/gate';
import { observeErrors } from '@vigil/observe';
import { ERROR_REFERENCE_FILE, errorReference } from './generate-error-docs.ts';

test('docs/reference/errors.md is what the catalogues generate (npm run generate:error-docs rewrites it)', () => {
  assert.equal(readFileSync(ERROR_REFERENCE_FILE, 'utf8'), errorReference(), 'docs/reference/errors.md is out of date: run npm run generate:error-docs');
});

test('every error of both catalogues says when it is answered, and its code is in the reference', () => {
  const reference = readFileSync(ERROR_REFERENCE_FILE, 'utf8');
  for (const [service, catalogue] of Object.entries({ observe: observeErrors, gate: gateErrors })) {
    for (const [key, spec] of Object.entries(catalogue)) {
      assert.ok(spec.when !== undefined && spec.when.length > 0, `${service} error ${key} has no \`when\``);
      assert.ok(reference.includes(`| \`${spec.code}\` | ${spec.status} |`), `${service} error ${key} (${spec.code}) is not in docs/reference/errors.md`);
    }
  }
});
