import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';
import { chainHash } from './chain.ts';
import type { Event } from './schemas.ts';

const script = resolve(import.meta.dirname, '../../../../docs/verify-export.mjs');

function runScript(...files: string[]): { code: number; output: string } {
  try {
    return { code: 0, output: execFileSync(process.execPath, [script, ...files], { encoding: 'utf8' }) };
  } catch (error) {
    const failed = error as { status: number; stdout: string };
    return { code: failed.status, output: failed.stdout };
  }
}

await describeEachDatabase('docs/verify-export.mjs re-verifies an exported session offline', (backend) => {
  let observe: TestObserve;
  const dir = mkdtempSync(join(tmpdir(), 'vigil-export-'));
  before(async () => {
    observe = await startTestObserve(backend);
    const events = [
      { sessionId: 'export', agentId: 'a', eventType: 'session_started', payload: { agentName: 'Ünïcode “agent”', tags: ['z', 'a'] } },
      {
        sessionId: 'export',
        agentId: 'a',
        eventType: 'custom',
        metadata: { b: 1, a: [1.5, -0, 1e21] },
        payload: { type: 'note', data: { z: null, '\u00e9': 'x', a: true } },
      },
      { sessionId: 'export', agentId: 'a', eventType: 'session_ended', timestamp: '2026-11-22T12:00:00+02:00', payload: { reason: 'completed' } },
    ];
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201);
  });
  after(() => observe.close());

  test('an intact export verifies, with the head from /api/audit/verify', async () => {
    const timeline = (await observe.call({ method: 'GET', url: '/api/sessions/export/timeline' })).body;
    const verify = (await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=export' })).body;
    writeFileSync(join(dir, 'timeline.json'), timeline);
    writeFileSync(join(dir, 'verify.json'), verify);
    const result = runScript(join(dir, 'timeline.json'), join(dir, 'verify.json'));
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /^VALID: 3 events/);
  });

  test('an edited or truncated export does not', async () => {
    const timeline = (await observe.call({ method: 'GET', url: '/api/sessions/export/timeline' })).json() as { events: { payload: Record<string, unknown> }[] };
    const verify = (await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=export' })).body;
    writeFileSync(join(dir, 'verify.json'), verify);

    const edited = structuredClone(timeline);
    edited.events[1]!.payload.type = 'edited';
    writeFileSync(join(dir, 'edited.json'), JSON.stringify(edited));
    const editedResult = runScript(join(dir, 'edited.json'));
    assert.equal(editedResult.code, 1);
    assert.match(editedResult.output, /INVALID at seq 1/);

    const truncated = { events: timeline.events.slice(0, 2) };
    writeFileSync(join(dir, 'truncated.json'), JSON.stringify(truncated));
    const truncatedResult = runScript(join(dir, 'truncated.json'), join(dir, 'verify.json'));
    assert.equal(truncatedResult.code, 1);
    assert.match(truncatedResult.output, /INVALID at seq 2/);
  });

  test('an export with an event past the recorded head does not, even when that event links perfectly', async () => {
    const timeline = (await observe.call({ method: 'GET', url: '/api/sessions/export/timeline' })).json() as { events: Event[] };
    const verify = (await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=export' })).body;
    writeFileSync(join(dir, 'verify.json'), verify);
    const last = [...timeline.events].sort((a, b) => a.seq - b.seq).at(-1)!;
    const fields = { ...last, id: 'appended-later', seq: last.seq + 1, eventType: 'custom', payload: { type: 'note', data: 'added' }, prevHash: last.hash };
    const appended = { ...fields, hash: chainHash(fields) };
    writeFileSync(join(dir, 'appended.json'), JSON.stringify({ events: [...timeline.events, appended] }));
    assert.equal(runScript(join(dir, 'appended.json')).code, 0, 'without the recorded head the chain links up');
    const result = runScript(join(dir, 'appended.json'), join(dir, 'verify.json'));
    assert.equal(result.code, 1);
    assert.match(result.output, /^INVALID at seq 3: event appended-later is stored past the recorded head/);
  });
});
