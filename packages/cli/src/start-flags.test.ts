import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { expectStatus, firstObserveKey, removeDir, ServiceProcess, startScriptNodeFlags, tempDir } from './cluster.ts';

const dirs: string[] = [];
const services: ServiceProcess[] = [];
after(async () => {
  await Promise.all(services.map((service) => service.stop()));
  dirs.forEach(removeDir);
});

/** Events per POST /api/events: the most a batch may hold (docs/api.md, Limits). */
const BATCH = 1000;
/** Characters of text in each event's arguments: a batch body of just under the 10 MiB limit. */
const TEXT_CHARS = 10_000;

/** One batch of `session`'s events numbered from `first`, each a tool call carrying TEXT_CHARS of text. */
function batchBody(session: string, first: number): string {
  const events = Array.from({ length: BATCH }, (_, i) => ({
    sessionId: session,
    agentId: 'agent-large',
    eventType: 'tool_call',
    payload: { toolName: 'read_file', callId: `c${first + i}`, arguments: { text: `${first + i} `.padEnd(TEXT_CHARS, 'lorem ipsum ') } },
  }));
  return JSON.stringify({ events });
}

describe("npm start's node flags (package.json `start`)", () => {
  test('the largest requests the API allows succeed under them: 1,000-event batches of ~10 MB, then one 5,000-step replay page of that session', async () => {
    const dir = tempDir('vigil-start-flags-');
    dirs.push(dir);
    const observe = await ServiceProcess.create('observe', {}, dir, startScriptNodeFlags());
    services.push(observe);
    await observe.start();
    const key = await firstObserveKey(observe.base);
    const session = 'large-session';
    for (let first = 0; first < 5 * BATCH; first += BATCH) {
      const body = batchBody(session, first);
      assert.ok(body.length > 9.5 * 1024 * 1024 && body.length < 10 * 1024 * 1024, `a batch body of ${body.length} bytes`);
      const response = await fetch(`${observe.base}/api/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body,
      });
      const answer = await response.text();
      assert.equal(response.status, 201, `batch from ${first}: ${answer.slice(0, 500)}`);
    }
    const page = await expectStatus<{ chainValid: boolean; totalSteps: number; steps: unknown[] }>(
      200,
      observe.base,
      'GET',
      `/api/sessions/${session}/replay?limit=5000`,
      { key },
    );
    assert.equal(page.chainValid, true);
    assert.equal(page.totalSteps, 5000);
    assert.equal(page.steps.length, 5000);
    assert.ok(observe.running, `the process is still serving:\n${observe.output}`);
  });
});
