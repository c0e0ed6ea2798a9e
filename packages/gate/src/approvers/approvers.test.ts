import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { discordClick, slackClick, startChatGate, waitForCount, waitUntil, type ChatGate } from '../chat/chat-harness.ts';
import { assertGateError } from '../testing.ts';

const text = (value: unknown): string => JSON.stringify(value);

interface Progress {
  required: number;
  denialsRequired: number;
  groups: string[];
  approvedBy: string[];
  deniedBy: string[];
}

await describeEachDatabase('gate approvers: quorum, groups, delegation', (backend) => {
  let chat: ChatGate;
  const keys = new Map<string, string>();
  before(async () => {
    chat = await startChatGate(backend);
    for (const name of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'xavier'])
      keys.set(name, await chat.gate.createKey(['request:decide', 'request:read'], null, name));
  });
  after(() => chat.close());

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, key?: string) =>
    chat.gate.call({ method, url, ...(payload !== undefined && { payload }) }, key);
  const decide = (id: string, who: string, decision: 'approved' | 'denied' = 'approved') =>
    call('POST', `/api/requests/${id}/decide`, { decision }, keys.get(who));
  const events = async (id: string) => (await chat.audit(id)).map((entry) => entry.event);
  const approvals = async (id: string) => ((await chat.getRequest(id)) as unknown as { approvals: Progress | null }).approvals;

  async function policy(name: string, quorum: object, extra: object = {}) {
    await chat.createPolicy({ name, rules: [{ match: { action: name }, decision: 'route_to_human', quorum, ...extra }] });
  }

  test('2 of N: each approval is its own entry, the second decides; the same decider twice is 409; progress on the request', async () => {
    await policy('two_of_n', { approvals: 2 });
    const request = await chat.createRequest({ action: 'two_of_n', params: {} });
    assert.deepEqual(await approvals(request.id), { required: 2, denialsRequired: 1, groups: [], approvedBy: [], deniedBy: [] });
    const first = await decide(request.id, 'alice');
    assert.equal(first.statusCode, 202, first.body);
    assert.deepEqual(first.json(), {
      id: request.id,
      status: 'pending',
      approvals: { required: 2, denialsRequired: 1, approvedBy: ['api:alice'], deniedBy: [] },
    });
    assertGateError(await decide(request.id, 'alice'), 409, 'conflict', 'second vote');
    const second = await decide(request.id, 'bob');
    assert.equal(second.statusCode, 200, second.body);
    assert.equal(second.json<{ status: string }>().status, 'approved');
    assert.equal(second.json<{ decidedBy: string }>().decidedBy, 'api:bob');
    assert.ok(second.json<{ receipt: unknown }>().receipt);
    assert.deepEqual(await events(request.id), ['created', 'voted', 'approved']);
    const trail = await chat.audit(request.id);
    assert.equal(trail[1]!.actor, 'api:alice');
    assert.deepEqual((trail[2]!.details as { approvedBy: string[] }).approvedBy, ['api:alice', 'api:bob']);
    assert.deepEqual((await approvals(request.id))!.approvedBy, ['api:alice', 'api:bob']);
    assertGateError(await decide(request.id, 'carol'), 409, 'conflict', 'after the decision');
  });

  test('any deny denies by default; with denials: 2 one deny only counts', async () => {
    await policy('veto', { approvals: 3 });
    const vetoed = await chat.createRequest({ action: 'veto', params: {} });
    assert.equal((await decide(vetoed.id, 'alice')).statusCode, 202);
    const denied = await decide(vetoed.id, 'bob', 'denied');
    assert.equal(denied.json<{ status: string }>().status, 'denied');
    await policy('two_denials', { approvals: 2, denials: 2 });
    const request = await chat.createRequest({ action: 'two_denials', params: {} });
    assert.equal((await decide(request.id, 'alice', 'denied')).statusCode, 202);
    assert.equal((await decide(request.id, 'bob')).statusCode, 202);
    assert.equal((await decide(request.id, 'carol')).json<{ status: string }>().status, 'approved');
    assert.deepEqual(await approvals(request.id), {
      required: 2,
      denialsRequired: 2,
      groups: [],
      approvedBy: ['api:bob', 'api:carol'],
      deniedBy: ['api:alice'],
    });
  });

  test('concurrent clicks: exactly one final decision, from distinct deciders', async () => {
    await policy('concurrent', { approvals: 3 });
    for (let round = 0; round < 3; round += 1) {
      const request = await chat.createRequest({ action: 'concurrent', params: { round } });
      const deciders = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
      const answers = await Promise.all(deciders.map((who, i) => decide(request.id, who, round === 2 && i === 4 ? 'denied' : 'approved')));
      const codes = answers.map((answer) => answer.statusCode);
      assert.equal(codes.filter((code) => code === 200).length, 1, text(codes));
      const trail = await chat.audit(request.id);
      const finals = trail.filter((entry) => entry.event === 'approved' || entry.event === 'denied');
      assert.equal(finals.length, 1, text(trail.map((e) => e.event)));
      const votes = trail.filter((entry) => entry.event === 'voted');
      const voters = [...votes, ...finals].map((entry) => entry.actor);
      assert.equal(new Set(voters).size, voters.length, 'distinct deciders');
      if (finals[0]!.event === 'approved') assert.equal(voters.length, 3);
      assert.equal(codes.filter((code) => code === 202).length, votes.length);
      assert.equal(codes.filter((code) => code === 409).length, deciders.length - voters.length);
    }
  });

  test('approver groups: CRUD through the change log; a quorum naming a group admits its members and, while active, their delegates', async () => {
    const created = await call('POST', '/api/approver-groups', { name: 'finance', members: ['api:alice', 'api:bob', 'slack:U7'], description: 'Pays' });
    assert.equal(created.statusCode, 201, created.body);
    const group = created.json<{ id: string; members: string[] }>();
    assertGateError(await call('POST', '/api/approver-groups', { name: 'finance', members: [] }), 409, 'conflict');
    assertGateError(await call('POST', '/api/approver-groups', { name: 'bad name!', members: [] }), 400, 'bad_request');
    assertGateError(await call('POST', '/api/approver-groups', { name: 'x', members: [] }, keys.get('alice')), 403, 'forbidden');
    const renamed = await call('PUT', `/api/approver-groups/${group.id}`, { description: 'Pays invoices' });
    assert.equal(renamed.json<{ description: string }>().description, 'Pays invoices');
    assertGateError(await call('PUT', '/api/approver-groups/nope', { description: 'x' }), 404, 'not_found');
    const listed = await call('GET', '/api/approver-groups', undefined, keys.get('alice'));
    assert.deepEqual(
      listed.json<{ groups: { name: string }[] }>().groups.map((g) => g.name),
      ['finance'],
    );

    await policy('group_quorum', { approvals: 2, groups: ['finance'] });
    const request = await chat.createRequest({ action: 'group_quorum', params: {} });
    assertGateError(await decide(request.id, 'xavier'), 403, 'forbidden', 'outside the group');
    // Alice is out of office: xavier votes for her.
    const now = chat.gate.clock.now();
    const delegation = await call('POST', '/api/delegations', {
      delegator: 'api:alice',
      delegate: 'api:xavier',
      endsAt: new Date(now + 3_600_000).toISOString(),
      reason: 'holiday',
    });
    assert.equal(delegation.statusCode, 201, delegation.body);
    assert.equal(delegation.json<{ active: boolean }>().active, true);
    assertGateError(
      await call('POST', '/api/delegations', { delegator: 'api:a', delegate: 'api:a', endsAt: new Date(now + 1000).toISOString() }),
      400,
      'bad_request',
    );
    assertGateError(
      await call('POST', '/api/delegations', { delegator: 'api:a', delegate: 'api:b', endsAt: new Date(now - 1000).toISOString() }),
      400,
      'bad_request',
    );
    assert.equal((await decide(request.id, 'xavier')).statusCode, 202);
    assert.deepEqual((await approvals(request.id))!.approvedBy, ['api:alice']);
    assert.equal((await chat.audit(request.id)).at(-1)!.details!.onBehalfOf, 'api:alice');
    assertGateError(await decide(request.id, 'alice'), 409, 'conflict', 'alice already voted through her delegate');
    const revoked = await call('DELETE', `/api/delegations/${delegation.json<{ id: string }>().id}`);
    assert.equal(revoked.json<{ active: boolean; revokedAt: string | null }>().active, false);
    const other = await chat.createRequest({ action: 'group_quorum', params: { n: 2 } });
    assertGateError(await decide(other.id, 'xavier'), 403, 'forbidden', 'after the revocation');

    // A delegation window that has not started or has ended lends nothing.
    await call('POST', '/api/delegations', {
      delegator: 'api:bob',
      delegate: 'api:xavier',
      startsAt: new Date(now + 60_000).toISOString(),
      endsAt: new Date(now + 120_000).toISOString(),
    });
    assertGateError(await decide(other.id, 'xavier'), 403, 'forbidden', 'before the window');
    chat.gate.clock.advance(60_000);
    assert.equal((await decide(other.id, 'xavier')).statusCode, 202, 'inside the window');
    chat.gate.clock.advance(60_000);
    const third = await chat.createRequest({ action: 'group_quorum', params: { n: 3 } });
    assertGateError(await decide(third.id, 'xavier'), 403, 'forbidden', 'after the window');

    const changes = await call('GET', '/api/audit/changes?resource=approver_group');
    assert.deepEqual(
      changes
        .json<{ entries: { action: string }[] }>()
        .entries.map((e) => e.action)
        .sort(),
      ['created', 'updated'],
    );
    const delegations = await call('GET', '/api/audit/changes?resource=delegation');
    assert.deepEqual(
      delegations
        .json<{ entries: { action: string }[] }>()
        .entries.map((e) => e.action)
        .sort(),
      ['created', 'created', 'revoked'],
    );
    assert.equal((await call('DELETE', `/api/approver-groups/${group.id}`)).statusCode, 200);
    assertGateError(await call('DELETE', `/api/approver-groups/${group.id}`), 404, 'not_found');
  });

  test('chat: a group of Slack users decides, a delegate clicks for a decider, and the message shows the progress, edited in place', async () => {
    await call('POST', '/api/approver-groups', { name: 'ops', members: ['slack:U7', 'slack:U8'] });
    await chat.createPolicy({
      name: 'ops two',
      rules: [{ match: { action: 'ops_two' }, decision: 'route_to_human', approvers: ['group:ops'], quorum: { approvals: 2 } }],
    });
    const request = await chat.createRequest({ action: 'ops_two', params: {} });
    const [post] = await waitForCount('the post', () => chat.slack.messagesOf(request.id, 'chat.postMessage'));
    assert.match(text(post!.blocks), /0 of 2/);
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(request.id, 'slack')).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );
    // U1 is a configured decider, but the rule names its own approvers (the group): refused.
    await chat.slackInteraction(slackClick('U1', 'vigil_approve', request.id));
    assert.equal((await events(request.id)).at(-1), 'decision_refused');
    await chat.slackInteraction(slackClick('U7', 'vigil_approve', request.id));
    const [edit] = await waitForCount('the progress edit', () =>
      chat.slack.messagesOf(request.id, 'chat.update').filter((call) => text(call.blocks).includes('1 of 2')),
    );
    assert.match(text(edit!.blocks), /slack:U7/);
    assert.ok(
      edit!.blocks.some((block) => block.type === 'actions'),
      'the buttons stay while votes are missing',
    );
    // U8 is away: U9 holds their authority.
    const now = chat.gate.clock.now();
    await call('POST', '/api/delegations', { delegator: 'slack:U8', delegate: 'slack:U9', endsAt: new Date(now + 3_600_000).toISOString() });
    await chat.slackInteraction(slackClick('U9', 'vigil_approve', request.id));
    const decided = await chat.getRequest(request.id);
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decidedBy, 'slack:U9');
    await waitForCount('the final edit', () =>
      chat.slack.messagesOf(request.id, 'chat.update').filter((call) => text(call.blocks).includes('Approved by <@U9>')),
    );
  });

  test('chat: on Discord a vote answers the message with the progress at once, the edits follow; a delegate votes for a group member', async () => {
    await call('POST', '/api/approver-groups', { name: 'sre', members: ['discord:51', 'discord:52', 'discord:53'] });
    await chat.createPolicy({
      name: 'sre two',
      rules: [{ match: { action: 'sre_two' }, decision: 'route_to_human', approvers: ['group:sre'], quorum: { approvals: 2, groups: ['sre'] } }],
    });
    const request = await chat.createRequest({ action: 'sre_two', params: {} });
    const [post] = await waitForCount('the Discord post', () => chat.discord.messagesOf(request.id, 'POST'));
    assert.match(text(post!.body), /0 of 2/);
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(request.id, 'discord')).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );
    // 42 is a configured decider, but the rule names its group: refused.
    const refused = await chat.discordInteraction(discordClick('42', `vigil_approve:${request.id}`));
    assert.match(text(refused.json()), /may not decide/);
    const first = await chat.discordInteraction(discordClick('51', `vigil_approve:${request.id}`));
    const answer = first.json<{ type: number; data: Record<string, unknown> }>();
    assert.equal(answer.type, 7, 'UPDATE_MESSAGE');
    assert.match(text(answer.data), /1 of 2 \(discord:51\)/);
    await waitForCount('the progress edit', () => chat.discord.messagesOf(request.id, 'PATCH').filter((call) => text(call.body).includes('1 of 2')));
    // 53 is away; 60 holds their authority.
    await call('POST', '/api/delegations', {
      delegator: 'discord:53',
      delegate: 'discord:60',
      endsAt: new Date(chat.gate.clock.now() + 3_600_000).toISOString(),
    });
    const last = await chat.discordInteraction(discordClick('60', `vigil_approve:${request.id}`));
    assert.match(text(last.json()), /Approved by <@60>/);
    const decided = await chat.getRequest(request.id);
    assert.equal(decided.status, 'approved');
    assert.deepEqual((decided as unknown as { approvals: Progress }).approvals.approvedBy, ['discord:51', 'discord:53']);
  });
});
