import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'node:test';
import { fetchWithTimeout } from './outbound.ts';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

test('fetchWithTimeout gives up at its deadline with a caller signal beside it, even when garbage is collected while it waits', async () => {
  const held: ServerResponse[] = [];
  const server = createServer((_request, res) => held.push(res)).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const started = Date.now();
    const call = fetchWithTimeout(url, { method: 'POST', body: '{}', timeoutMs: 300, signal: new AbortController().signal });
    // The deadline must not depend on anything the collector may take while the call waits.
    const collecting = setInterval(collectGarbage, 20);
    try {
      const outcome = await Promise.race([
        call.then(
          () => 'answered',
          (error: Error) => error.name,
        ),
        new Promise((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3000)),
      ]);
      assert.equal(outcome, 'TimeoutError');
      assert.ok(Date.now() - started >= 250, 'not before the deadline');
    } finally {
      clearInterval(collecting);
    }
  } finally {
    for (const res of held) res.destroy();
    server.close();
  }
});
