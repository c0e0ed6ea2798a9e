import assert from 'node:assert/strict';
import { test } from 'node:test';
import { environment, newId } from './runtime.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Runs `fn` with globalThis.crypto replaced by `replacement` (undefined: removed), as runtimes without it have. */
function withCrypto<T>(replacement: object | undefined, fn: () => T): T {
  const original = Object.getOwnPropertyDescriptor(globalThis, 'crypto')!;
  Object.defineProperty(globalThis, 'crypto', { value: replacement, configurable: true, writable: true });
  try {
    return fn();
  } finally {
    Object.defineProperty(globalThis, 'crypto', original);
  }
}

test('newId answers distinct UUIDv4s with randomUUID, with only getRandomValues (insecure page), and without Web Crypto (Node 18)', () => {
  const insecure = { getRandomValues: globalThis.crypto.getRandomValues.bind(globalThis.crypto) } as object;
  for (const make of [() => newId(), () => withCrypto(insecure, newId), () => withCrypto(undefined, newId)]) {
    const ids = new Set(Array.from({ length: 1000 }, make));
    assert.equal(ids.size, 1000);
    for (const id of ids) assert.match(id, UUID_V4);
  }
});

test('environment reads process.env where it exists and answers undefined where the runtime has no process', () => {
  process.env.VIGIL_RUNTIME_TEST = 'yes';
  assert.equal(environment('VIGIL_RUNTIME_TEST'), 'yes');
  const original = Object.getOwnPropertyDescriptor(globalThis, 'process')!;
  Object.defineProperty(globalThis, 'process', { value: undefined, configurable: true, writable: true });
  try {
    assert.equal(environment('VIGIL_RUNTIME_TEST'), undefined);
  } finally {
    Object.defineProperty(globalThis, 'process', original);
  }
});
