import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UUID } from 'uuidv7';
import { newId } from './ids.ts';

test('newId writes a UUIDv7 in the canonical 8-4-4-4-12 lower-case form, each id sorting after the one before', () => {
  let previous = '';
  for (let i = 0; i < 5000; i++) {
    const id = newId();
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The package's own text of the same 16 bytes.
    assert.equal(UUID.parse(id).toString(), id);
    assert.ok(id > previous, `${id} sorts after ${previous}`);
    previous = id;
  }
  const now = Date.now();
  const stamped = Number.parseInt(newId().replaceAll('-', '').slice(0, 12), 16);
  assert.ok(Math.abs(stamped - now) < 60_000, 'the first 48 bits are the time in milliseconds');
});
