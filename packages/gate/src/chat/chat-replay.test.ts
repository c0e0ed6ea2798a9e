// A captured chat click replayed within its signature window (issue 36): refused with 401 before
// anything is decided or audited, on both platforms, however the signature is spelled.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertGateError } from '../testing.ts';
import { SIGNATURE_WINDOW_S } from './platforms.ts';
import {
  discordClick,
  discordSignature,
  slackClick,
  slackSignature,
  SLACK_SECRET,
  startChatGate,
  waitForCount,
  waitUntil,
  type ChatGate,
} from './chat-harness.ts';

await describeEachDatabase('gate chat: replayed interactions', (backend) => {
  let chat: ChatGate;
  before(async () => {
    chat = await startChatGate(backend);
  });
  after(() => chat.close());

  async function postedRequest(platform: 'slack' | 'discord') {
    const request = await chat.createRequest({ action: 'deploy', params: { env: 'prod' } });
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(request.id, platform)).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );
    return request;
  }

  const leafCount = async () =>
    Number(
      (
        await chat.gate.service.context.database.db
          .selectFrom('audit_log_leaves')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const seconds = () => String(Math.floor(chat.gate.clock.now() / 1000));

  test("Slack: one non-decider's click replayed 5 times writes one refusal entry and one leaf; each replay is 401", async () => {
    const request = await postedRequest('slack');
    const leavesBefore = await leafCount();
    const timestamp = seconds();
    const body = `payload=${encodeURIComponent(JSON.stringify(slackClick('U9', 'vigil_approve', request.id)))}`;
    const captured = { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': slackSignature(SLACK_SECRET, timestamp, body) };
    const send = () =>
      chat.gate.service.app.inject({
        method: 'POST',
        url: '/api/chat/slack/interactions',
        payload: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...captured },
      });
    assert.equal((await send()).statusCode, 200);
    await waitForCount('ephemeral notes to U9', () => chat.slack.calls('chat.postEphemeral').filter((call) => call.fields.user === 'U9'));
    for (let replay = 1; replay <= 5; replay++) {
      const message = assertGateError(await send(), 401, 'unauthorized', `replay ${replay}`);
      assert.match(message, /already received/);
    }
    assert.equal((await chat.audit(request.id)).filter((e) => e.event === 'decision_refused').length, 1, 'one refusal entry');
    assert.equal((await leafCount()) - leavesBefore, 1, 'one leaf');
    assert.equal(chat.slack.calls('chat.postEphemeral').filter((call) => call.fields.user === 'U9').length, 1, 'one note');
  });

  test("Slack: a decider's approving click replayed is refused and changes nothing", async () => {
    const request = await postedRequest('slack');
    const click = slackClick('U1', 'vigil_approve', request.id);
    const timestamp = seconds();
    assert.equal((await chat.slackInteraction(click, { 'x-slack-request-timestamp': timestamp })).statusCode, 200);
    assert.equal((await chat.getRequest(request.id)).status, 'approved');
    assertGateError(await chat.slackInteraction(click, { 'x-slack-request-timestamp': timestamp }), 401, 'unauthorized', 'replay');
    assert.deepEqual(
      (await chat.audit(request.id)).map((e) => e.event),
      ['created', 'approved'],
    );
  });

  test("Discord: a non-decider's click replayed, also with its signature's hex re-cased, writes one refusal entry", async () => {
    const request = await postedRequest('discord');
    const leavesBefore = await leafCount();
    const body = JSON.stringify(discordClick('99', `vigil_deny:${request.id}`));
    const timestamp = seconds();
    const signature = discordSignature(chat.discordKey, timestamp, body);
    const send = (spelling: string) =>
      chat.gate.service.app.inject({
        method: 'POST',
        url: '/api/chat/discord/interactions',
        payload: body,
        headers: { 'content-type': 'application/json', 'x-signature-timestamp': timestamp, 'x-signature-ed25519': spelling },
      });
    assert.equal((await send(signature)).statusCode, 200);
    for (let replay = 1; replay <= 5; replay++) assertGateError(await send(signature), 401, 'unauthorized', `replay ${replay}`);
    assertGateError(await send(signature.toUpperCase()), 401, 'unauthorized', 'the same signature in upper-case hex');
    assert.equal((await chat.audit(request.id)).filter((e) => e.event === 'decision_refused').length, 1, 'one refusal entry');
    assert.equal((await leafCount()) - leavesBefore, 1, 'one leaf');
  });

  test('a received interaction is remembered until its signature is stale, then swept', async () => {
    const request = await postedRequest('discord');
    const { db } = chat.gate.service.context.database;
    assert.equal((await chat.discordInteraction(discordClick('98', `vigil_deny:${request.id}`))).statusCode, 200);
    const remembered = await db.selectFrom('chat_seen_interactions').select('expires_at').execute();
    assert.ok(remembered.length > 0);
    assert.ok(remembered.every((row) => Number(row.expires_at) > chat.gate.clock.now()));
    chat.gate.clock.advance((SIGNATURE_WINDOW_S + 2) * 1000);
    assert.equal((await chat.discordInteraction(discordClick('97', `vigil_deny:${request.id}`))).statusCode, 200);
    assert.equal((await db.selectFrom('chat_seen_interactions').select('digest').execute()).length, 1, 'only the newest interaction is kept');
  });
});
