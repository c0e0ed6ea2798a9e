import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@vigil/platform';
import { describeEachDatabase, REFUSED_URL, sendJson } from '@vigil/platform/testing';
import { gateConfigFromEnvironment } from '../config.ts';
import { assertGateError, startTestGate } from '../testing.ts';
import {
  discordClick,
  DISCORD_CHANNEL,
  discordSignature,
  startBudgetChatGate,
  startChatGate,
  waitForCount,
  waitUntil,
  type ChatGate,
  type SpendFigure,
} from './chat-harness.ts';

interface DiscordAnswer {
  type: number;
  data?: { content?: string; flags?: number; custom_id?: string; components?: { components: { custom_id: string }[] }[]; embeds?: unknown[] };
}

type Component = { type: number; custom_id?: string; label?: string; components?: Component[] };

const buttonsOf = (body: Record<string, unknown>): Component[] => ((body.components as Component[]) ?? []).flatMap((row) => row.components ?? []);

await describeEachDatabase('gate chat: Discord', (backend) => {
  let chat: ChatGate;
  before(async () => {
    chat = await startChatGate(backend);
  });
  after(() => chat.close());

  async function postedRequest(payload: object = { action: 'deploy', params: { env: 'prod' } }) {
    const request = await chat.createRequest(payload);
    const [post] = await waitForCount('Discord posts', () => chat.discord.messagesOf(request.id, 'POST'));
    // The post's delivery settled (its message id stored), so an edit after it never finds the message unposted.
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(request.id, 'discord')).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );
    return { request, post: post! };
  }

  test('grants and budget breaches are posted as embeds: a grant made, used up and revoked; a hard breach naming the paused agents', async () => {
    const figure: SpendFigure = { key: 'team-x', spendUsd: 0, agentIds: ['agent-b', 'agent-c'] };
    const linked = await startBudgetChatGate(backend, figure);
    try {
      const { gate, discord } = linked.chat;
      const embedsOf = (footer: string) =>
        discord
          .calls('POST')
          .filter((call) => JSON.stringify(call.body).includes(footer))
          .map((call) => ({ path: call.path, content: call.body.content, embed: (call.body.embeds as Record<string, unknown>[])[0]! }));
      const fieldsOf = (embed: Record<string, unknown>) =>
        Object.fromEntries((embed.fields as { name: string; value: string }[]).map((f) => [f.name, f.value]));

      const made = await gate.call({ method: 'POST', url: '/api/grants', payload: { action: 'deploy', agentId: 'agent-b', maxUses: 1 } });
      const grant = made.json() as { id: string };
      assert.equal((await linked.chat.createRequest({ action: 'deploy', params: {}, context: { agentId: 'agent-b' } })).status, 'approved');
      const [created, usedUp] = await waitForCount('grant embeds', () => embedsOf(`Grant ${grant.id}`), 2);
      assert.equal(created!.path, `/channels/${DISCORD_CHANNEL}/messages`);
      assert.equal(created!.content, '**Grant created: deploy**');
      assert.deepEqual([fieldsOf(created!.embed).Agent, fieldsOf(created!.embed).Uses], ['agent-b', '0 of 1']);
      assert.equal(usedUp!.content, '**Grant used up: deploy**');
      assert.equal(fieldsOf(usedUp!.embed).Uses, '1 of 1');
      assert.equal('components' in discord.calls('POST').find((call) => JSON.stringify(call.body).includes(`Grant ${grant.id}`))!.body, false, 'no buttons');
      // A used-up grant is still revoked (and announced).
      assert.equal((await gate.call({ method: 'POST', url: `/api/grants/${grant.id}/revoke` })).statusCode, 200);
      const [, , revoked] = await waitForCount('grant embeds', () => embedsOf(`Grant ${grant.id}`), 3);
      assert.equal(revoked!.content, '**Grant revoked: deploy**');

      const budget = await gate.call({
        method: 'POST',
        url: '/api/budgets',
        payload: { name: 'team-x-hourly', scope: 'tag', scopeValue: 'team-x', window: 'hour', hardUsd: 20 },
      });
      const budgetId = (budget.json() as { id: string }).id;
      figure.spendUsd = 25;
      await linked.poll();
      const [hard] = await waitForCount('budget embeds', () => embedsOf(`Budget ${budgetId}`));
      assert.equal(hard!.content, '**Budget "team-x-hourly": hard threshold $20 crossed**');
      assert.equal(hard!.embed.color, 0xef4444);
      assert.deepEqual(fieldsOf(hard!.embed), {
        Spend: '$25 of $20 (hour window)',
        Covers: 'team-x',
        Now: 'matching requests are denied',
        Paused: 'agent-b, agent-c',
      });
    } finally {
      await linked.close();
    }
  });

  const click = async (user: string, action: 'vigil_approve' | 'vigil_deny', requestId: string, roles: string[] = []) => {
    const response = await chat.discordInteraction(discordClick(user, `${action}:${requestId}`, roles));
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as DiscordAnswer;
  };

  test('a request routed to a human is posted with its action, params, urgency, agent, policy, expiry and Approve / Deny buttons', async () => {
    const policy = await chat.createPolicy({ name: 'Migrations need a human', rules: [{ match: { action: 'run_migration' }, decision: 'route_to_human' }] });
    const expiresAt = new Date(chat.gate.clock.now() + 3_600_000).toISOString();
    const { request, post } = await postedRequest({
      action: 'run_migration',
      params: { database: 'orders', steps: 3 },
      urgency: 'critical',
      context: { agentId: 'agent-9' },
      expiresAt,
    });
    assert.equal(post.path, `/channels/${DISCORD_CHANNEL}/messages`);
    assert.equal(post.authorization, 'Bot discord-bot-token');
    const body = JSON.stringify(post.body);
    for (const shown of ['run_migration', 'database', 'orders', 'steps', 'critical', 'agent-9', policy.name, expiresAt]) {
      assert.ok(body.includes(shown), `the message shows ${shown}: ${body}`);
    }
    assert.deepEqual(
      buttonsOf(post.body).map((button) => [button.custom_id, button.label]),
      [
        [`vigil_approve:${request.id}`, 'Approve'],
        [`vigil_deny:${request.id}`, 'Deny'],
      ],
    );
  });

  test('auto-decided requests are not posted; a rule with channels ["slack:C9"] posts nothing to Discord, ["discord:555"] to that channel only', async () => {
    await chat.createPolicy({
      name: 'Discord routing',
      rules: [
        { match: { action: 'read_logs' }, decision: 'auto_approve' },
        { match: { action: 'drop_db' }, decision: 'auto_deny' },
        { match: { action: 'slack_only' }, decision: 'route_to_human', channels: ['slack:C9'] },
        { match: { action: 'ops_only' }, decision: 'route_to_human', channels: ['discord:555'] },
      ],
    });
    const approved = await chat.createRequest({ action: 'read_logs', params: {} });
    const denied = await chat.createRequest({ action: 'drop_db', params: {} });
    const slackOnly = await chat.createRequest({ action: 'slack_only', params: {} });
    const { request: ops, post } = await postedRequest({ action: 'ops_only', params: {} });
    assert.equal(post.path, '/channels/555/messages');
    await waitForCount('Slack posts', () => chat.slack.messagesOf(slackOnly.id, 'chat.postMessage'));
    await chat.gate.service.jobs.webhooks.tick();
    for (const id of [approved.id, denied.id, slackOnly.id]) assert.deepEqual(chat.discord.messagesOf(id, 'POST'), [], id);
    assert.deepEqual(chat.slack.messagesOf(ops.id, 'chat.postMessage'), [], 'a Discord channel rule posts nothing to Slack');
    assert.equal(chat.slack.messagesOf(slackOnly.id, 'chat.postMessage')[0]?.fields.channel, 'C9');
  });

  test('a click by a decider decides: answered type 7 with the outcome, decidedBy discord:<user>, the audit entry, then a PATCH without buttons', async () => {
    const { request, post } = await postedRequest();
    const answer = await click('42', 'vigil_approve', request.id);
    assert.equal(answer.type, 7);
    assert.match(answer.data?.content ?? '', /Approved by <@42>/);
    assert.deepEqual(answer.data?.components, []);
    const decided = await chat.getRequest(request.id);
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decidedBy, 'discord:42');
    const entry = (await chat.audit(request.id)).find((e) => e.event === 'approved');
    assert.equal(entry?.actor, 'discord:42');
    assert.equal(entry?.details?.userName, 'member-42');
    const [patch] = await waitForCount('Discord edits', () => chat.discord.messagesOf(request.id, 'PATCH'));
    const messageId = (
      await chat.gate.service.context.database.db
        .selectFrom('chat_messages')
        .select('message_id')
        .where('request_id', '=', request.id)
        .where('platform', '=', 'discord')
        .executeTakeFirstOrThrow()
    ).message_id;
    assert.equal(patch!.path, `/channels/${DISCORD_CHANNEL}/messages/${messageId}`);
    assert.ok(post.body.content !== patch!.body.content);
    assert.match(String(patch!.body.content), /Approved by <@42>/);
    assert.deepEqual(patch!.body.components, []);
  });

  test('a signed PING answers {type: 1}; an unsigned PING, a forged or stale signature, and a missing one are 401 and decide nothing', async () => {
    const ping = await chat.discordInteraction({ type: 1, id: 'ping' });
    assert.equal(ping.statusCode, 200, ping.body);
    assert.deepEqual(ping.json(), { type: 1 });
    assertGateError(
      await chat.discordInteraction({ type: 1 }, { 'x-signature-ed25519': undefined, 'x-signature-timestamp': undefined }),
      401,
      'unauthorized',
      'unsigned PING',
    );

    const { request } = await postedRequest();
    const interaction = discordClick('42', `vigil_approve:${request.id}`);
    assertGateError(await chat.discordInteraction(interaction, { 'x-signature-ed25519': 'ab'.repeat(64) }), 401, 'unauthorized', 'forged');
    const stale = String(Math.floor(chat.gate.clock.now() / 1000) - 301);
    assertGateError(await chat.discordInteraction(interaction, { 'x-signature-timestamp': stale }), 401, 'unauthorized', 'stale (signed, 301 s old)');
    assertGateError(await chat.discordInteraction(interaction, { 'x-signature-ed25519': undefined }), 401, 'unauthorized', 'missing signature');
    // A signature of another body (a replayed signature on an edited click).
    const other = discordClick('42', `vigil_deny:${request.id}`);
    const timestamp = String(Math.floor(chat.gate.clock.now() / 1000));
    const signatureOfOther = discordSignature(chat.discordKey, timestamp, JSON.stringify(other));
    assertGateError(
      await chat.discordInteraction(interaction, { 'x-signature-timestamp': timestamp, 'x-signature-ed25519': signatureOfOther }),
      401,
      'unauthorized',
      'another body',
    );
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    assert.deepEqual(
      (await chat.audit(request.id)).map((e) => e.event),
      ['created'],
    );
  });

  test('a click by someone else is refused with an ephemeral type 4 answer and a decision_refused entry; the request stays pending', async () => {
    const { request } = await postedRequest();
    const answer = await click('99', 'vigil_deny', request.id);
    assert.equal(answer.type, 4);
    assert.equal(answer.data?.flags, 64);
    assert.match(answer.data?.content ?? '', /may not decide/);
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    const refused = (await chat.audit(request.id)).filter((e) => e.event === 'decision_refused');
    assert.deepEqual(
      refused.map((e) => [e.actor, e.details?.attempted]),
      [['discord:99', 'denied']],
    );
  });

  test("a rule's approvers (a role) override DISCORD_DECIDERS", async () => {
    await chat.createPolicy({
      name: 'Role 55 decides payouts',
      rules: [{ match: { action: 'payout' }, decision: 'route_to_human', approvers: ['discord:role:55'] }],
    });
    const { request } = await postedRequest({ action: 'payout', params: { amount: 10 } });
    const refused = await click('42', 'vigil_approve', request.id, ['12']);
    assert.equal(refused.type, 4, 'user 42 is a configured decider, but the rule names its own');
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    const admitted = await click('77', 'vigil_approve', request.id, ['12', '55']);
    assert.equal(admitted.type, 7);
    assert.equal((await chat.getRequest(request.id)).decidedBy, 'discord:77');
  });

  test('requireReason: a click answers a type 9 modal; its MODAL_SUBMIT with the reason decides; an empty reason decides nothing', async () => {
    await chat.createPolicy({ name: 'Refunds need a reason', rules: [{ match: { action: 'refund' }, decision: 'route_to_human', requireReason: true }] });
    const { request } = await postedRequest({ action: 'refund', params: { amount: 99 } });
    const modal = await click('43', 'vigil_deny', request.id);
    assert.equal(modal.type, 9);
    assert.equal(modal.data?.custom_id, `vigil_reason:denied:${request.id}`);
    assert.equal(modal.data?.components?.[0]?.components[0]?.custom_id, 'reason');
    assert.equal((await chat.getRequest(request.id)).status, 'pending', 'a click alone does not decide');
    const submit = (value: string) =>
      chat.discordInteraction({
        type: 5,
        member: { user: { id: '43', username: 'member-43' }, roles: [] },
        data: { custom_id: modal.data!.custom_id, components: [{ type: 1, components: [{ type: 4, custom_id: 'reason', value }] }] },
      });
    const empty = (await submit('  ')).json() as DiscordAnswer;
    assert.equal(empty.type, 4);
    assert.equal(empty.data?.flags, 64);
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    const submitted = (await submit('Already refunded by hand')).json() as DiscordAnswer;
    assert.equal(submitted.type, 7);
    assert.match(submitted.data?.content ?? '', /Denied by <@43> — Already refunded by hand/);
    const decided = await chat.getRequest(request.id);
    assert.equal(decided.status, 'denied');
    assert.equal(decided.decidedBy, 'discord:43');
    assert.equal(decided.decisionReason, 'Already refunded by hand');
  });

  test('a decision through the API (the dashboard) edits the message; so does expiry', async () => {
    const { request } = await postedRequest();
    const decide = await chat.gate.call({ method: 'POST', url: `/api/requests/${request.id}/decide`, payload: { decision: 'approved' } });
    assert.equal(decide.statusCode, 200, decide.body);
    const [patch] = await waitForCount('Discord edits', () => chat.discord.messagesOf(request.id, 'PATCH'));
    assert.match(String(patch!.body.content), /Approved by api:admin/);
    assert.deepEqual(patch!.body.components, []);

    const expiresAt = new Date(chat.gate.clock.now() + 60_000).toISOString();
    const { request: expiring } = await postedRequest({ action: 'deploy', params: {}, expiresAt });
    chat.gate.clock.advance(61_000);
    assert.equal(await chat.gate.service.jobs.expiry.tick(), true);
    assert.equal((await chat.getRequest(expiring.id)).status, 'expired');
    const [expired] = await waitForCount('Discord edits', () => chat.discord.messagesOf(expiring.id, 'PATCH'));
    assert.match(String(expired!.body.content), /Expired before a decision/);
    assert.deepEqual(expired!.body.components, []);
  });

  test('a click after the decision answers "already ..."; two concurrent clicks have exactly one winner', async () => {
    const { request } = await postedRequest();
    assert.equal((await click('42', 'vigil_approve', request.id)).type, 7);
    const late = await click('43', 'vigil_deny', request.id);
    assert.equal(late.type, 4);
    assert.match(late.data?.content ?? '', /already approved by <@42>/);
    assert.equal((await chat.getRequest(request.id)).decidedBy, 'discord:42');

    const { request: raced } = await postedRequest();
    const answers = await Promise.all([click('42', 'vigil_approve', raced.id), click('43', 'vigil_deny', raced.id)]);
    assert.deepEqual(answers.map((a) => a.type).sort(), [4, 7], JSON.stringify(answers));
    const decided = await chat.getRequest(raced.id);
    const winner = answers[0]!.type === 7 ? 'discord:42' : 'discord:43';
    assert.equal(decided.decidedBy, winner);
    assert.equal(decided.status, winner === 'discord:42' ? 'approved' : 'denied');
    assert.match(answers.find((a) => a.type === 4)!.data?.content ?? '', /already/i);
    const decisions = (await chat.audit(raced.id)).filter((e) => e.event === 'approved' || e.event === 'denied');
    assert.deepEqual(
      decisions.map((e) => e.actor),
      [winner],
    );
  });

  test('a 429 with Retry-After: 7 keeps the post pending at least 7 s, then the retry posts; a 500 is retried', async () => {
    let refuse: number | null = 429;
    chat.discord.override = (request, res) => {
      if (refuse === null || request.method !== 'POST') return false;
      if (refuse === 429) sendJson(res.setHeader('retry-after', '7'), 429, { message: 'You are being rate limited.', retry_after: 7, global: false });
      else sendJson(res, refuse, { message: 'Internal Server Error' });
      return true;
    };
    try {
      const start = chat.gate.clock.now();
      const request = await chat.createRequest({ action: 'deploy', params: { env: 'staging' } });
      const limited = await waitUntil('the first attempt', async () => (await chat.deliveriesOf(request.id, 'discord')).find((row) => row.attempts === 1));
      assert.equal(limited.status, 'pending');
      assert.equal(limited.response_status, 429);
      assert.ok(limited.next_attempt_at >= start + 7000, `next attempt at +${limited.next_attempt_at - start} ms`);
      refuse = null;
      chat.gate.clock.advance(6000);
      await chat.gate.service.jobs.webhooks.tick();
      assert.equal(chat.discord.messagesOf(request.id, 'POST').length, 1, 'not retried before Retry-After (the one call is the refused one)');
      chat.gate.clock.advance(1000);
      await chat.gate.service.jobs.webhooks.tick();
      assert.equal(chat.discord.messagesOf(request.id, 'POST').length, 2, 'the retry posts');
      assert.equal((await chat.deliveriesOf(request.id, 'discord'))[0]?.status, 'delivered');

      refuse = 500;
      const failing = await chat.createRequest({ action: 'deploy', params: { env: 'qa' } });
      const failed = await waitUntil('the first attempt', async () => (await chat.deliveriesOf(failing.id, 'discord')).find((row) => row.attempts === 1));
      assert.equal(failed.status, 'pending');
      assert.equal(failed.response_status, 500);
      refuse = null;
      chat.gate.clock.advance(2000);
      await chat.gate.service.jobs.webhooks.tick();
      assert.equal(chat.discord.messagesOf(failing.id, 'POST').length, 2, 'the retry after a 500 posts');
      assert.equal((await chat.deliveriesOf(failing.id, 'discord'))[0]?.status, 'delivered');
    } finally {
      chat.discord.override = () => false;
    }
  });

  test('a platform that is down does not fail the request: 201, the post stays pending', async () => {
    const other = await startChatGate(backend, { DISCORD_API_URL: `${REFUSED_URL}/api/v10` });
    try {
      const request = await other.createRequest({ action: 'deploy', params: {} });
      assert.equal(request.status, 'pending');
      const row = await waitUntil('the first attempt', async () => (await other.deliveriesOf(request.id, 'discord')).find((r) => r.attempts === 1));
      assert.equal(row.status, 'pending');
      assert.equal(row.response_status, null);
      assert.match(row.last_error ?? '', /could not be reached/);
    } finally {
      await other.close();
    }
  });
});

describe('gate chat: configuration', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-chat-config-'));
  const configFor = (env: Record<string, string>) => () => gateConfigFromEnvironment({ LOG_LEVEL: 'silent', ...env }, { dataDir });

  test("some but not all of a platform's required variables: a ConfigError naming each missing one", () => {
    assert.throws(configFor({ SLACK_BOT_TOKEN: 'xoxb-1' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, /SLACK_SIGNING_SECRET/);
      assert.match(error.message, /SLACK_CHANNEL_ID/);
      assert.doesNotMatch(error.message, /SLACK_BOT_TOKEN:/);
      return true;
    });
    assert.throws(configFor({ DISCORD_BOT_TOKEN: 'bot', DISCORD_CHANNEL_ID: '1' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, /DISCORD_PUBLIC_KEY/);
      assert.doesNotMatch(error.message, /DISCORD_CHANNEL_ID:/);
      return true;
    });
    assert.throws(configFor({ DISCORD_BOT_TOKEN: 'bot', DISCORD_CHANNEL_ID: '1', DISCORD_PUBLIC_KEY: 'abc' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, /DISCORD_PUBLIC_KEY: .*64 hex/);
      return true;
    });
    const none = configFor({})();
    assert.deepEqual(none.chat, {});
    const slackOnly = configFor({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', SLACK_CHANNEL_ID: 'C1' })();
    assert.equal(slackOnly.chat.slack?.channel, 'C1');
    assert.equal(slackOnly.chat.discord, undefined);
  });
});

await describeEachDatabase('gate chat: unconfigured platforms', (backend) => {
  test('the interaction routes of a platform that is not configured do not exist (404)', async () => {
    const gate = await startTestGate(backend);
    try {
      for (const url of ['/api/chat/slack/interactions', '/api/chat/discord/interactions']) {
        const response = await gate.service.app.inject({ method: 'POST', url, payload: '{"type":1}', headers: { 'content-type': 'application/json' } });
        assert.equal(response.statusCode, 404, `${url}: ${response.body}`);
      }
    } finally {
      await gate.close();
    }
    const slackOnly = await startTestGate(backend, { env: { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', SLACK_CHANNEL_ID: 'C1' } });
    try {
      const discord = await slackOnly.service.app.inject({
        method: 'POST',
        url: '/api/chat/discord/interactions',
        payload: '{"type":1}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(discord.statusCode, 404, discord.body);
      const slack = await slackOnly.service.app.inject({
        method: 'POST',
        url: '/api/chat/slack/interactions',
        payload: 'payload=%7B%7D',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assertGateError(slack, 401, 'unauthorized', 'the configured platform has its route');
    } finally {
      await slackOnly.close();
    }
  });
});
