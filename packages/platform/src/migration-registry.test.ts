// collectMigrations (db.ts): a service's steps from its history and its features, in name order, and
// a startup failure on a name that would run twice, out of order or never.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectMigrations, collectMigrationsAround, type MigrationStep } from './db.ts';

const step: MigrationStep = async () => {};

test('collects the steps of every source in name order', () => {
  const history = { '0002_b': step, '0001_a': step };
  const feature = { '0004_d': step };
  const other = { '0003_c': step };
  assert.deepEqual(Object.keys(collectMigrations(history, feature, other)), ['0001_a', '0002_b', '0003_c', '0004_d']);
});

test('fails on a name declared twice', () => {
  assert.throws(() => collectMigrations({ '0001_a': step, '0002_b': step }, { '0002_b': step }), /0002_b is declared twice/);
});

test('fails on two steps with the same number', () => {
  assert.throws(() => collectMigrations({ '0001_a': step, '0002_b': step }, { '0002_c': step }), /0002_b and 0002_c share the number 0002/);
});

test('fails on a missing number', () => {
  assert.throws(() => collectMigrations({ '0001_a': step, '0002_b': step }, { '0004_d': step }), /0004_d comes after 0002_b: step 0003 is missing/);
  assert.throws(() => collectMigrations({ '0002_b': step }), /0002_b comes after nothing: step 0001 is missing/);
});

test('fails on a name that does not start with four digits', () => {
  assert.throws(() => collectMigrations({ '0001_a': step, '2_b': step }), /step 2_b: a step's name is four digits/);
});

test('numbers pending on other branches are gaps; a step arriving at one, or another gap, fails', () => {
  const steps = { '0001_a': step, '0002_b': step, '0005_e': step };
  assert.deepEqual(Object.keys(collectMigrationsAround(['0003', '0004'], steps)), ['0001_a', '0002_b', '0005_e']);
  assert.throws(() => collectMigrationsAround(['0003'], steps), /0005_e comes after 0002_b: step 0004 is missing/);
  assert.throws(() => collectMigrationsAround(['0003', '0004'], steps, { '0003_c': step }), /0003_c has arrived: take 0003 off the pending numbers/);
});
