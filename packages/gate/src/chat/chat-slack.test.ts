import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, REFUSED_URL, TestHttpServer } from '@vigil/platform/testing';
import { assertGateError } from '../testing.ts';
import {
  slackClick,
  SLACK_CHANNEL,
  SLACK_GROUP_MEMBER,
  startBudgetChatGate,
  startChatGate,
  waitForCount,
  waitUntil,
  type ChatGate,
  type SpendFigure,
} from './chat-harness.ts';

const text = (value: unknown): string => JSON.stringify(value);
const hasButtons = (blocks: Record<string, unknown>[]) => blocks.some((block) => block.type === 'actions');

await describeEachDatabase('gate chat: Slack', (backend) => {
  let chat: ChatGate;
  before(async () => {
    chat = await startChatGate(backend);
  });
  after(() => chat.close());

  /** A request routed to a human, once its Slack message is posted. */
  async function postedRequest(payload: object = { action: 'deploy', params: { env: 'prod' } }) {
    const request = await chat.createRequest(payload);
    const [post] = await waitForCount('Slack posts', () => chat.slack.messagesOf(request.id, 'chat.postMessage'));
    // The post's delivery settled (its message id stored), so an edit after it never finds the message unposted.
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(request.id, 'slack')).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );
    return { request, post: post! };
  }

  test('a request routed to a human is posted with its action, params, urgency, agent, policy, expiry and Approve / Deny buttons', async () => {
    const policy = await chat.createPolicy({ name: 'Deploys need a human', rules: [{ match: { action: 'deploy_service' }, decision: 'route_to_human' }] });
    const expiresAt = new Date(chat.gate.clock.now() + 3_600_000).toISOString();
    const { request, post } = await postedRequest({
      action: 'deploy_service',
      params: { service: 'billing', version: '2.4.1' },
      urgency: 'high',
      context: { agentId: 'agent-7' },
      expiresAt,
    });
    assert.equal(post.authorization, 'Bearer xoxb-test-token');
    assert.equal(post.fields.channel, SLACK_CHANNEL);
    assert.match(post.fields.text!, /deploy_service/);
    const blocks = text(post.blocks);
    for (const shown of ['deploy_service', 'service', 'billing', 'version', '2.4.1', 'high', 'agent-7', policy.name, expiresAt]) {
      assert.ok(blocks.includes(shown), `the message shows ${shown}: ${blocks}`);
    }
    const actions = post.blocks.find((block) => block.type === 'actions') as { elements: { action_id: string; value: string; text: { text: string } }[] };
    assert.deepEqual(
      actions.elements.map((button) => [button.action_id, button.value, button.text.text]),
      [
        ['vigil_approve', request.id, 'Approve'],
        ['vigil_deny', request.id, 'Deny'],
      ],
    );
    // No policy at all routes to a human too, and says so.
    const { post: unmatched } = await postedRequest({ action: 'unmatched_action', params: {} });
    assert.ok(text(unmatched.blocks).includes('no rule matched'), text(unmatched.blocks));
  });

  test('auto_approve and auto_deny requests are not posted; a rule with channels ["slack:C9"] posts to Slack channel C9 only', async () => {
    await chat.createPolicy({
      name: 'Automatic and channelled',
      rules: [
        { match: { action: 'read_logs' }, decision: 'auto_approve' },
        { match: { action: 'drop_db' }, decision: 'auto_deny' },
        { match: { action: 'rotate_keys' }, decision: 'route_to_human', channels: ['slack:C9'] },
      ],
    });
    const approved = await chat.createRequest({ action: 'read_logs', params: {} });
    const denied = await chat.createRequest({ action: 'drop_db', params: {} });
    assert.equal(approved.status, 'approved');
    assert.equal(denied.status, 'denied');
    const { request, post } = await postedRequest({ action: 'rotate_keys', params: {} });
    assert.equal(post.fields.channel, 'C9');
    // Every delivery written so far has been attempted: nothing else was posted for these requests, anywhere.
    await chat.gate.service.jobs.webhooks.tick();
    assert.deepEqual(chat.slack.messagesOf(approved.id, 'chat.postMessage'), []);
    assert.deepEqual(chat.slack.messagesOf(denied.id, 'chat.postMessage'), []);
    assert.equal(chat.slack.messagesOf(request.id, 'chat.postMessage').length, 1);
    assert.deepEqual(chat.discord.messagesOf(request.id, 'POST'), [], 'a Slack channel rule posts nothing to Discord');
    assert.deepEqual(chat.discord.messagesOf(approved.id, 'POST'), []);
  });

  test('grants are announced: made from a request in its channel, used up by the request that took its last use, revoked in the default channel', async () => {
    await chat.createPolicy({ name: 'Credits in C7', rules: [{ match: { action: 'issue_credit' }, decision: 'route_to_human', channels: ['slack:C7'] }] });
    const { request } = await postedRequest({ action: 'issue_credit', params: {}, context: { agentId: 'agent-g' } });
    const made = await chat.gate.call({ method: 'POST', url: '/api/grants', payload: { requestId: request.id, maxUses: 1 } });
    assert.equal(made.statusCode, 201, made.body);
    const grant = made.json() as { id: string };
    const noticesOf = (id: string) => chat.slack.calls('chat.postMessage').filter((call) => call.fields.blocks?.includes(`Grant ${id}`));
    const [created] = await waitForCount('grant notices', () => noticesOf(grant.id));
    assert.equal(created!.fields.channel, 'C7', "the request's channel");
    assert.equal(created!.fields.text, 'Grant created: issue_credit');
    for (const shown of ['agent-g', '0 of 1', 'no time limit', 'Granted by'])
      assert.ok(text(created!.blocks).includes(shown), `${shown}: ${text(created!.blocks)}`);
    assert.equal(hasButtons(created!.blocks), false, 'a notice has nothing to decide');

    const used = await chat.createRequest({ action: 'issue_credit', params: {}, context: { agentId: 'agent-g' } });
    assert.equal(used.status, 'approved');
    const [, usedUp] = await waitForCount('grant notices', () => noticesOf(grant.id), 2);
    assert.equal(usedUp!.fields.text, 'Grant used up: issue_credit');
    assert.equal(usedUp!.fields.channel, 'C7');
    assert.ok(text(usedUp!.blocks).includes('1 of 1') && text(usedUp!.blocks).includes(`request:${used.id}`), text(usedUp!.blocks));

    const standing = await chat.gate.call({
      method: 'POST',
      url: '/api/grants',
      payload: { action: 'issue_credit', agentId: 'agent-h', durationSeconds: 600 },
    });
    const other = standing.json() as { id: string };
    assert.equal((await chat.gate.call({ method: 'POST', url: `/api/grants/${other.id}/revoke` })).statusCode, 200);
    const [, revoked] = await waitForCount('grant notices', () => noticesOf(other.id), 2);
    assert.equal(revoked!.fields.text, 'Grant revoked: issue_credit');
    assert.equal(revoked!.fields.channel, SLACK_CHANNEL, 'a grant made without a request is announced in the default channel');
    assert.ok(text(revoked!.blocks).includes('Revoked by'), text(revoked!.blocks));
    // Every delivery written so far has been attempted: two notices per grant, no more.
    await chat.gate.service.jobs.webhooks.tick();
    assert.deepEqual([noticesOf(grant.id).length, noticesOf(other.id).length], [2, 2]);
  });

  test('a budget threshold crossed is announced once per level in the default channel; the hard one names the agents it paused', async () => {
    const figure: SpendFigure = { key: 'agent-a', spendUsd: 0, agentIds: ['agent-a'] };
    const linked = await startBudgetChatGate(backend, figure);
    try {
      const made = await linked.chat.gate.call({
        method: 'POST',
        url: '/api/budgets',
        payload: { name: 'agent-a-daily', scope: 'agent', scopeValue: 'agent-a', window: 'day', softUsd: 10, hardUsd: 50 },
      });
      assert.equal(made.statusCode, 201, made.body);
      const notices = () => linked.chat.slack.calls('chat.postMessage').filter((call) => call.fields.text?.startsWith('Budget "agent-a-daily"'));
      await linked.poll();
      figure.spendUsd = 12.5;
      await linked.poll();
      const [soft] = await waitForCount('budget notices', notices);
      assert.equal(soft!.fields.channel, SLACK_CHANNEL);
      assert.equal(soft!.fields.text, 'Budget "agent-a-daily": soft threshold $10 crossed');
      assert.ok(text(soft!.blocks).includes('$12.5 of $10 (day window)') && text(soft!.blocks).includes('wait for a person'), text(soft!.blocks));

      figure.spendUsd = 60;
      await linked.poll();
      await linked.poll();
      const [, hard] = await waitForCount('budget notices', notices, 2);
      assert.equal(hard!.fields.text, 'Budget "agent-a-daily": hard threshold $50 crossed');
      assert.ok(text(hard!.blocks).includes('Paused') && text(hard!.blocks).includes('agent-a') && text(hard!.blocks).includes('denied'), text(hard!.blocks));
      assert.equal(linked.observe.requests.filter((r) => r.url === '/api/internal/agents/agent-a/pause').length, 1, 'and the agent was paused');
      await linked.chat.gate.service.jobs.webhooks.tick();
      assert.equal(notices().length, 2, 'each level once, however many polls see it');
    } finally {
      await linked.close();
    }
  });

  test('a click by a decider decides: status, decidedBy slack:<user>, the audit entry, then chat.update shows the outcome without buttons', async () => {
    const { request } = await postedRequest();
    const response = await chat.slackInteraction(slackClick('U1', 'vigil_approve', request.id));
    assert.equal(response.statusCode, 200, response.body);
    const decided = await chat.getRequest(request.id);
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decidedBy, 'slack:U1');
    const entry = (await chat.audit(request.id)).find((e) => e.event === 'approved');
    assert.equal(entry?.actor, 'slack:U1');
    assert.equal(entry?.details?.platform, 'slack');
    const [update] = await waitForCount('Slack edits', () => chat.slack.messagesOf(request.id, 'chat.update'));
    assert.equal(update!.fields.channel, SLACK_CHANNEL);
    assert.match(text(update!.blocks), /Approved by <@U1>/);
    assert.equal(hasButtons(update!.blocks), false, 'the edited message has no buttons');
  });

  test("the spec's decidedBy format reaches webhook payloads too: request.decided carries slack:<user id>", async () => {
    const receiver = await new TestHttpServer((_request, res) => res.writeHead(200).end()).start();
    try {
      const hook = await chat.gate.call({ method: 'POST', url: '/api/webhooks', payload: { url: `${receiver.url}/hook`, events: ['request.decided'] } });
      assert.equal(hook.statusCode, 201, hook.body);
      const { request } = await postedRequest();
      await chat.slackInteraction(slackClick('U1', 'vigil_deny', request.id));
      const [delivery] = await waitForCount('webhook deliveries', () => receiver.requests.filter((r) => r.url === '/hook'));
      const body = JSON.parse(delivery!.body) as { event: string; data: { id: string; status: string; decidedBy: string } };
      assert.equal(body.event, 'request.decided');
      assert.deepEqual([body.data.id, body.data.status, body.data.decidedBy], [request.id, 'denied', 'slack:U1']);
      await chat.gate.call({ method: 'DELETE', url: `/api/webhooks/${(hook.json() as { id: string }).id}` });
    } finally {
      await receiver.stop();
    }
  });

  test('the edit names the posted message: chat.update carries the ts chat.postMessage answered', async () => {
    const { request } = await postedRequest();
    await chat.slackInteraction(slackClick('U2', 'vigil_deny', request.id));
    const [update] = await waitForCount('Slack edits', () => chat.slack.messagesOf(request.id, 'chat.update'));
    const row = await chat.gate.service.context.database.db
      .selectFrom('chat_messages')
      .selectAll()
      .where('request_id', '=', request.id)
      .where('platform', '=', 'slack')
      .executeTakeFirstOrThrow();
    assert.equal(update!.fields.ts, row.message_id);
    assert.match(text(update!.blocks), /Denied by <@U2>/);
    assert.equal((await chat.getRequest(request.id)).status, 'denied');
  });

  test('a forged signature, a stale timestamp and a missing signature are refused with 401 and decide nothing', async () => {
    const { request } = await postedRequest();
    const click = slackClick('U1', 'vigil_approve', request.id);
    assertGateError(await chat.slackInteraction(click, { 'x-slack-signature': `v0=${'0'.repeat(64)}` }), 401, 'unauthorized', 'forged');
    const stale = String(Math.floor(chat.gate.clock.now() / 1000) - 301);
    assertGateError(await chat.slackInteraction(click, { 'x-slack-request-timestamp': stale }), 401, 'unauthorized', 'stale (signed, 301 s old)');
    assertGateError(await chat.slackInteraction(click, { 'x-slack-signature': undefined }), 401, 'unauthorized', 'missing signature');
    assertGateError(
      await chat.slackInteraction(click, { 'x-slack-request-timestamp': undefined, 'x-slack-signature': undefined }),
      401,
      'unauthorized',
      'no headers',
    );
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    assert.deepEqual(
      (await chat.audit(request.id)).map((e) => e.event),
      ['created'],
    );
  });

  test('a click by someone else is refused: an ephemeral note to them, the request stays pending, a decision_refused audit entry', async () => {
    const { request } = await postedRequest();
    const response = await chat.slackInteraction(slackClick('U9', 'vigil_approve', request.id));
    assert.equal(response.statusCode, 200, response.body);
    const [note] = await waitForCount('ephemeral notes to U9', () => chat.slack.calls('chat.postEphemeral').filter((call) => call.fields.user === 'U9'));
    assert.equal(note!.fields.channel, SLACK_CHANNEL);
    assert.match(note!.fields.text!, /may not decide/);
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    const refused = (await chat.audit(request.id)).filter((e) => e.event === 'decision_refused');
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.actor, 'slack:U9');
    assert.equal(refused[0]!.details?.attempted, 'approved');
  });

  test("a rule's approvers override SLACK_DECIDERS; a member of a user group in SLACK_DECIDERS may decide", async () => {
    await chat.createPolicy({ name: 'U7 decides payouts', rules: [{ match: { action: 'payout' }, decision: 'route_to_human', approvers: ['slack:U7'] }] });
    const { request } = await postedRequest({ action: 'payout', params: { amount: 10 } });
    await chat.slackInteraction(slackClick('U1', 'vigil_approve', request.id));
    assert.equal((await chat.getRequest(request.id)).status, 'pending', 'U1 is a configured decider, but the rule names its own');
    assert.deepEqual(
      (await chat.audit(request.id)).filter((e) => e.event === 'decision_refused').map((e) => e.actor),
      ['slack:U1'],
    );
    await chat.slackInteraction(slackClick('U7', 'vigil_approve', request.id));
    assert.equal((await chat.getRequest(request.id)).decidedBy, 'slack:U7');

    const { request: grouped } = await postedRequest();
    await chat.slackInteraction(slackClick(SLACK_GROUP_MEMBER, 'vigil_deny', grouped.id));
    const decided = await chat.getRequest(grouped.id);
    assert.equal(decided.status, 'denied');
    assert.equal(decided.decidedBy, `slack:${SLACK_GROUP_MEMBER}`);
    assert.ok(chat.slack.calls('usergroups.users.list').some((call) => call.fields.usergroup === 'S123'));
  });

  test('requireReason: a click opens the reason modal; its submission decides with the reason; an empty reason answers errors', async () => {
    await chat.createPolicy({ name: 'Refunds need a reason', rules: [{ match: { action: 'refund' }, decision: 'route_to_human', requireReason: true }] });
    const { request } = await postedRequest({ action: 'refund', params: { amount: 99 } });
    const click = await chat.slackInteraction(slackClick('U1', 'vigil_approve', request.id));
    assert.equal(click.statusCode, 200, click.body);
    assert.equal((await chat.getRequest(request.id)).status, 'pending', 'a click alone does not decide');
    const [open] = await waitForCount('views.open calls', () =>
      chat.slack.calls('views.open').filter((call) => call.view?.private_metadata?.toString().includes(request.id)),
    );
    assert.equal(open!.fields.trigger_id, 'trigger-U1');
    assert.equal(open!.view?.type, 'modal');
    assert.equal(open!.view?.callback_id, 'vigil_reason');
    const submission = (reason: string) => ({
      type: 'view_submission',
      user: { id: 'U1', username: 'user-u1' },
      view: {
        callback_id: 'vigil_reason',
        private_metadata: open!.view!.private_metadata,
        state: { values: { reason: { reason: { type: 'plain_text_input', value: reason } } } },
      },
    });
    const empty = await chat.slackInteraction(submission('   '));
    assert.equal(empty.statusCode, 200);
    assert.deepEqual(empty.json(), { response_action: 'errors', errors: { reason: 'A reason is required.' } });
    assert.equal((await chat.getRequest(request.id)).status, 'pending');
    const submitted = await chat.slackInteraction(submission('Customer was double charged'));
    assert.equal(submitted.statusCode, 200, submitted.body);
    assert.equal(submitted.body, '', 'an empty 200 closes the modal');
    const decided = await chat.getRequest(request.id);
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decidedBy, 'slack:U1');
    assert.equal(decided.decisionReason, 'Customer was double charged');
  });

  test('a decision through the API (the dashboard) edits the message; so does expiry', async () => {
    const { request } = await postedRequest();
    const decide = await chat.gate.call({ method: 'POST', url: `/api/requests/${request.id}/decide`, payload: { decision: 'denied', reason: 'not today' } });
    assert.equal(decide.statusCode, 200, decide.body);
    const [update] = await waitForCount('Slack edits', () => chat.slack.messagesOf(request.id, 'chat.update'));
    assert.match(text(update!.blocks), /Denied by api:admin.*not today/);
    assert.equal(hasButtons(update!.blocks), false);

    // Approved, then confirmed through the API: the message says both.
    const { request: approved } = await postedRequest();
    await chat.slackInteraction(slackClick('U1', 'vigil_approve', approved.id));
    await waitForCount('Slack edits', () => chat.slack.messagesOf(approved.id, 'chat.update'));
    const confirm = await chat.gate.call({ method: 'POST', url: `/api/requests/${approved.id}/confirm`, payload: { result: { ok: true } } });
    assert.equal(confirm.statusCode, 200, confirm.body);
    const edits = await waitForCount('Slack edits', () => chat.slack.messagesOf(approved.id, 'chat.update'), 2);
    assert.match(text(edits[1]!.blocks), /Approved by <@U1>.*executed \(confirmed\)/);

    const expiresAt = new Date(chat.gate.clock.now() + 60_000).toISOString();
    const { request: expiring } = await postedRequest({ action: 'deploy', params: {}, expiresAt });
    chat.gate.clock.advance(61_000);
    assert.equal(await chat.gate.service.jobs.expiry.tick(), true);
    assert.equal((await chat.getRequest(expiring.id)).status, 'expired');
    const [expired] = await waitForCount('Slack edits', () => chat.slack.messagesOf(expiring.id, 'chat.update'));
    assert.match(text(expired!.blocks), /Expired before a decision/);
    assert.equal(hasButtons(expired!.blocks), false);

    // A click past the deadline, before the expiry job has run, expires the request instead of deciding it.
    const { request: late } = await postedRequest({ action: 'deploy', params: {}, expiresAt: new Date(chat.gate.clock.now() + 60_000).toISOString() });
    chat.gate.clock.advance(61_000);
    await chat.slackInteraction(slackClick('U1', 'vigil_approve', late.id));
    assert.equal((await chat.getRequest(late.id)).status, 'expired');
    const [note] = await waitForCount('ephemeral notes about the late click', () =>
      chat.slack.calls('chat.postEphemeral').filter((call) => call.fields.text?.includes('expired')),
    );
    assert.equal(note!.fields.user, 'U1');
    const [lateEdit] = await waitForCount('Slack edits', () => chat.slack.messagesOf(late.id, 'chat.update'));
    assert.match(text(lateEdit!.blocks), /Expired before a decision/);
  });

  test('a click after the decision answers "already ..." and changes nothing; two concurrent clicks have exactly one winner', async () => {
    const { request } = await postedRequest();
    await chat.slackInteraction(slackClick('U1', 'vigil_approve', request.id));
    await chat.slackInteraction(slackClick('U2', 'vigil_deny', request.id));
    const [note] = await waitForCount('ephemeral notes to U2', () => chat.slack.calls('chat.postEphemeral').filter((call) => call.fields.user === 'U2'));
    assert.match(note!.fields.text!, /already approved by <@U1>/);
    const after = await chat.getRequest(request.id);
    assert.equal(after.status, 'approved');
    assert.equal(after.decidedBy, 'slack:U1');

    const { request: raced } = await postedRequest();
    const notesBefore = chat.slack.calls('chat.postEphemeral').length;
    const answers = await Promise.all([
      chat.slackInteraction(slackClick('U1', 'vigil_approve', raced.id)),
      chat.slackInteraction(slackClick('U2', 'vigil_deny', raced.id)),
    ]);
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [200, 200],
    );
    const decided = await chat.getRequest(raced.id);
    assert.ok(['slack:U1', 'slack:U2'].includes(decided.decidedBy!), String(decided.decidedBy));
    assert.equal(decided.status, decided.decidedBy === 'slack:U1' ? 'approved' : 'denied');
    const decisions = (await chat.audit(raced.id)).filter((e) => e.event === 'approved' || e.event === 'denied');
    assert.equal(decisions.length, 1, 'one decision entry');
    assert.equal(decisions[0]!.actor, decided.decidedBy);
    const loser = decided.decidedBy === 'slack:U1' ? 'U2' : 'U1';
    const [lost] = await waitForCount('a note to the loser', () =>
      chat.slack
        .calls('chat.postEphemeral')
        .slice(notesBefore)
        .filter((call) => call.fields.user === loser),
    );
    assert.match(lost!.fields.text!, /already/i);
  });

  test('a 429 with Retry-After: 7 keeps the post pending at least 7 s; after that the retry posts; a 500 is retried', async () => {
    let refuse: { status: number; headers: Record<string, string> } | null = { status: 429, headers: { 'retry-after': '7' } };
    chat.slack.override = (request, res) => {
      if (refuse === null || !request.url.startsWith('/api/chat.postMessage')) return false;
      res.writeHead(refuse.status, { 'content-type': 'application/json', ...refuse.headers }).end(JSON.stringify({ ok: false, error: 'ratelimited' }));
      return true;
    };
    try {
      const start = chat.gate.clock.now();
      const request = await chat.createRequest({ action: 'deploy', params: { env: 'staging' } });
      const limited = await waitUntil('the first attempt', async () => (await chat.deliveriesOf(request.id, 'slack')).find((row) => row.attempts === 1));
      assert.equal(limited.status, 'pending');
      assert.equal(limited.response_status, 429);
      assert.ok(limited.next_attempt_at >= start + 7000, `next attempt at +${limited.next_attempt_at - start} ms`);
      refuse = null;
      chat.gate.clock.advance(6000);
      await chat.gate.service.jobs.webhooks.tick();
      assert.equal(chat.slack.messagesOf(request.id, 'chat.postMessage').length, 1, 'not retried before Retry-After (the one call is the refused one)');
      chat.gate.clock.advance(1000);
      await chat.gate.service.jobs.webhooks.tick();
      assert.equal(chat.slack.messagesOf(request.id, 'chat.postMessage').length, 2, 'the retry posts');
      assert.equal((await chat.deliveriesOf(request.id, 'slack'))[0]?.status, 'delivered');

      refuse = { status: 500, headers: {} };
      const failing = await chat.createRequest({ action: 'deploy', params: { env: 'qa' } });
      const failed = await waitUntil('the first attempt', async () => (await chat.deliveriesOf(failing.id, 'slack')).find((row) => row.attempts === 1));
      assert.equal(failed.response_status, 500);
      assert.equal(failed.status, 'pending');
      refuse = null;
      chat.gate.clock.advance(2000);
      await chat.gate.service.jobs.webhooks.tick();
      assert.equal(chat.slack.messagesOf(failing.id, 'chat.postMessage').length, 2, 'the retry after a 500 posts');
      assert.equal((await chat.deliveriesOf(failing.id, 'slack'))[0]?.status, 'delivered');
    } finally {
      chat.slack.override = () => false;
    }
  });

  test('a platform that is down does not fail the request: 201, the post stays pending', async () => {
    const other = await startChatGate(backend, { SLACK_API_URL: `${REFUSED_URL}/api/` });
    try {
      const request = await other.createRequest({ action: 'deploy', params: {} });
      assert.equal(request.status, 'pending');
      const row = await waitUntil('the first attempt', async () => (await other.deliveriesOf(request.id, 'slack')).find((r) => r.attempts === 1));
      assert.equal(row.status, 'pending');
      assert.equal(row.response_status, null);
      assert.match(row.last_error ?? '', /could not be reached/);
    } finally {
      await other.close();
    }
  });
});
