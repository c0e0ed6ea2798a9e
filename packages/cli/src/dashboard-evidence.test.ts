/**
 * The evidence pack download on the Audit page, in a real browser (see dashboard-harness.ts): the
 * period and agent chosen, the button builds the pack (observe, with the gate's parts read through
 * the dashboard's gate session), the browser downloads it, and `vigil verify evidence` accepts it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, api, chromiumSkip, nav, signIn, startStack, type Stack } from './dashboard-harness.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');

describe('dashboard in a real browser: the evidence pack download', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  const dir = mkdtempSync(join(tmpdir(), 'vigil-dashboard-evidence-'));
  before(async () => {
    stack = await startStack();
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });
  after(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the Audit page downloads the signed pack of a period for one agent, and vigil verify evidence accepts it', async () => {
    const { page } = stack;
    const request = await api<{ id: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', {
      action: 'refund',
      params: { amount: 40 },
      context: { agentId: 'billing-bot' },
    });
    await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', { action: 'refund', params: {}, context: { agentId: 'other-bot' } });
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/audit/checkpoint');
    await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/audit/checkpoint');

    await nav(page).getByRole('link', { name: 'Audit log' }).click();
    const form = page.getByRole('form', { name: 'Evidence pack' });
    await form.getByLabel('Agent (optional)').fill('billing-bot');
    const downloading = page.waitForEvent('download');
    await form.getByRole('button', { name: 'Download evidence pack' }).click();
    const downloaded = await downloading;
    assert.match(downloaded.suggestedFilename(), /^vigil-evidence-.+\.jsonl$/);
    const file = join(dir, downloaded.suggestedFilename());
    await downloaded.saveAs(file);
    await form.getByText(`Downloaded ${downloaded.suggestedFilename()}`).waitFor();

    const files = new Map(
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { path: string; content: string })
        .map((f) => [f.path, f.content]),
    );
    const oversight = JSON.parse(files.get('parts/oversight.json')!) as { requests: { request: { id: string } }[] };
    assert.deepEqual(
      oversight.requests.map((r) => r.request.id),
      [request.id],
      "only the chosen agent's request",
    );
    const key = (await api<{ publicKey: string }>(stack.observeUrl, stack.observeKey, 'GET', '/api/audit/public-key')).publicKey;
    const verified = spawnSync(process.execPath, [bin, 'verify', 'evidence', file, '--public-key', key], { encoding: 'utf8' });
    assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /VALID evidence pack/);
    stack.noProblems();
  });
});
