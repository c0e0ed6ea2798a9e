import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteWriter } from './bytes.ts';

test('ByteWriter: text and bytes across chunk boundaries come out in order, as UTF-8', () => {
  const out = new ByteWriter();
  const expected: Buffer[] = [];
  const block = Buffer.from('{"k":"v"},'.repeat(10_000));
  for (let i = 0; i < 160; i++) {
    // Multi-byte characters land on every chunk boundary sooner or later.
    const text = `ü✓😀-${i}-`.repeat(1 + (i % 7) * 100);
    out.text(text);
    expected.push(Buffer.from(text));
    out.bytes(block, (1 + i * 997) % block.length);
    expected.push(block.subarray(0, (1 + i * 997) % block.length));
  }
  // One piece larger than a chunk.
  const large = Buffer.alloc(3 * 1024 * 1024, 'x');
  out.bytes(large);
  expected.push(large);
  assert.ok(out.buffers().length > 4, 'spread over several chunks');
  assert.deepEqual(Buffer.concat(out.buffers()), Buffer.concat(expected));
  assert.equal(out.toString(), Buffer.concat(expected).toString());
  out.release();
});

test('ByteWriter: a writer started after another was released writes its own bytes only', () => {
  const first = new ByteWriter();
  first.text('a'.repeat(3 * 1024 * 1024));
  first.release();
  const second = new ByteWriter();
  second.text('[1,2]');
  assert.equal(second.toString(), '[1,2]');
  second.release();
});
