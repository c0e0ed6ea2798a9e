import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sendJson, TestHttpServer, type ReceivedRequest, type TestBackend } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import type { AuditEntry } from '../audit-trail/index.ts';
import { windowStart } from '../budgets/index.ts';
import type { DeliveryRow } from '../webhooks/index.ts';
import { startTestGate, type TestGate } from '../testing.ts';

/**
 * The chat tests' parts: real local fakes of the Slack Web API and the Discord REST API, a gate
 * configured with both, and interactions signed exactly as each platform signs them.
 */

export const SLACK_SECRET = 'slack_signing_secret_for_tests';
export const SLACK_CHANNEL = 'C1';
export const DISCORD_CHANNEL = '100';
/** A Slack user group whose members (the fake lists them) may decide: SLACK_DECIDERS names it. */
export const SLACK_GROUP = 'S123';
export const SLACK_GROUP_MEMBER = 'U5';

/** A call the Slack fake received: the Web API method and its form fields (JSON fields parsed). */
export interface SlackCall {
  method: string;
  fields: Record<string, string>;
  blocks: Record<string, unknown>[];
  view: Record<string, unknown> | null;
  authorization: string | undefined;
}

/** A call the Discord fake received. */
export interface DiscordCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  authorization: string | undefined;
}

/** Answers one call itself (a 429, a 500) or returns false to let the fake answer as the platform does. */
export type Override = (request: ReceivedRequest, res: ServerResponse) => boolean;

function slackCall(request: ReceivedRequest): SlackCall {
  const fields = Object.fromEntries(new URLSearchParams(request.body));
  return {
    method: request.url.replace(/^\/api\//, '').split('?')[0]!,
    fields,
    blocks: fields.blocks === undefined ? [] : (JSON.parse(fields.blocks) as Record<string, unknown>[]),
    view: fields.view === undefined ? null : (JSON.parse(fields.view) as Record<string, unknown>),
    authorization: request.headers.authorization,
  };
}

/** The Slack Web API as the gate's client uses it (form-encoded calls under /api/). */
export class SlackFake {
  override: Override = () => false;
  private nextTs = 1;
  readonly server = new TestHttpServer((request, res) => {
    if (this.override(request, res)) return;
    const call = slackCall(request);
    switch (call.method) {
      case 'chat.postMessage':
        return sendJson(res, 200, { ok: true, channel: call.fields.channel, ts: `1700000000.${String(this.nextTs++).padStart(6, '0')}` });
      case 'chat.update':
        return sendJson(res, 200, { ok: true, channel: call.fields.channel, ts: call.fields.ts });
      case 'chat.postEphemeral':
        return sendJson(res, 200, { ok: true, message_ts: '1700000001.000001' });
      case 'views.open':
        return sendJson(res, 200, { ok: true, view: { id: 'V1' } });
      case 'usergroups.users.list':
        return sendJson(res, 200, { ok: true, users: call.fields.usergroup === SLACK_GROUP ? [SLACK_GROUP_MEMBER] : [] });
      default:
        return sendJson(res, 200, { ok: false, error: 'unknown_method' });
    }
  });

  calls(method?: string): SlackCall[] {
    return this.server.requests.map(slackCall).filter((call) => method === undefined || call.method === method);
  }

  /** The posts and edits of one request's message (its buttons and footer carry the request id). */
  messagesOf(requestId: string, method: 'chat.postMessage' | 'chat.update'): SlackCall[] {
    return this.calls(method).filter((call) => call.fields.blocks?.includes(requestId));
  }
}

/** The Discord REST API's two message calls. */
export class DiscordFake {
  override: Override = () => false;
  private nextId = 900;
  readonly server = new TestHttpServer((request, res) => {
    if (this.override(request, res)) return;
    const post = /^\/channels\/([^/]+)\/messages$/.exec(request.url);
    const patch = /^\/channels\/([^/]+)\/messages\/([^/]+)$/.exec(request.url);
    if (request.method === 'POST' && post) return sendJson(res, 200, { id: String(this.nextId++), channel_id: post[1] });
    if (request.method === 'PATCH' && patch) return sendJson(res, 200, { id: patch[2], channel_id: patch[1] });
    sendJson(res, 404, { message: 'Unknown route', code: 0 });
  });

  calls(method?: 'POST' | 'PATCH'): DiscordCall[] {
    return this.server.requests
      .filter((request) => method === undefined || request.method === method)
      .map((request) => ({
        method: request.method,
        path: request.url,
        body: JSON.parse(request.body) as Record<string, unknown>,
        authorization: request.headers.authorization,
      }));
  }

  messagesOf(requestId: string, method: 'POST' | 'PATCH'): DiscordCall[] {
    return this.calls(method).filter((call) => JSON.stringify(call.body).includes(requestId));
  }
}

/** Resolves once `read` answers at least `count` items; fails after `timeoutMs` (deliveries run in the background). */
export async function waitForCount<T>(what: string, read: () => T[], count = 1, timeoutMs = 5000): Promise<T[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const items = read();
    if (items.length >= count) return items;
    if (Date.now() > deadline) assert.fail(`expected ${count} ${what}, got ${items.length}`);
    await sleep(10);
  }
}

/** Resolves to what `read` answers once it is not undefined; fails after `timeoutMs`. */
export async function waitUntil<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export interface RequestDetail {
  id: string;
  status: string;
  decidedBy: string | null;
  decisionReason: string | null;
  expiresAt: string | null;
}

export interface ChatGate {
  gate: TestGate;
  slack: SlackFake;
  discord: DiscordFake;
  /** A Discord application key pair: the public half is DISCORD_PUBLIC_KEY. */
  discordKey: KeyObject;
  createRequest(payload: object): Promise<RequestDetail>;
  getRequest(id: string): Promise<RequestDetail>;
  audit(id: string): Promise<AuditEntry[]>;
  createPolicy(payload: object): Promise<{ id: string; name: string }>;
  /** The outbox rows of a request's messages on a platform (posts and edits), oldest first. */
  deliveriesOf(requestId: string, platform: 'slack' | 'discord'): Promise<DeliveryRow[]>;
  /** POSTs a Slack interaction payload, signed as Slack signs it (unless the headers say otherwise). */
  slackInteraction(payload: object, headers?: Record<string, string | undefined>): Promise<LightMyRequestResponse>;
  /** POSTs a Discord interaction, signed with the application key (unless the headers say otherwise). */
  discordInteraction(interaction: object, headers?: Record<string, string | undefined>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export function slackSignature(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
}

export function discordSignature(key: KeyObject, timestamp: string, body: string): string {
  return sign(null, Buffer.from(timestamp + body), key).toString('hex');
}

function withoutUndefined(headers: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** A gate with Slack and Discord both configured against local fakes; `env` adds or replaces variables. */
export async function startChatGate(backend: TestBackend, env: Record<string, string> = {}): Promise<ChatGate> {
  const slack = new SlackFake();
  const discord = new DiscordFake();
  await slack.server.start();
  await discord.server.start();
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const rawPublicKey = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
  const gate = await startTestGate(backend, {
    env: {
      SLACK_BOT_TOKEN: 'xoxb-test-token',
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      SLACK_CHANNEL_ID: SLACK_CHANNEL,
      SLACK_API_URL: `${slack.server.url}/api/`,
      SLACK_DECIDERS: `U1,U2,${SLACK_GROUP}`,
      DISCORD_BOT_TOKEN: 'discord-bot-token',
      DISCORD_PUBLIC_KEY: rawPublicKey,
      DISCORD_CHANNEL_ID: DISCORD_CHANNEL,
      DISCORD_API_URL: discord.server.url,
      DISCORD_DECIDERS: '42,43',
      ...env,
    },
  });
  const inject = (url: string, body: string, headers: Record<string, string>) => gate.service.app.inject({ method: 'POST', url, payload: body, headers });
  const seconds = () => String(Math.floor(gate.clock.now() / 1000));
  return {
    gate,
    slack,
    discord,
    discordKey: privateKey,
    async createRequest(payload) {
      const response = await gate.call({ method: 'POST', url: '/api/requests', payload });
      assert.equal(response.statusCode, 201, response.body);
      return response.json() as RequestDetail;
    },
    async getRequest(id) {
      const response = await gate.call({ method: 'GET', url: `/api/requests/${id}` });
      assert.equal(response.statusCode, 200, response.body);
      return response.json() as RequestDetail;
    },
    async audit(id) {
      const response = await gate.call({ method: 'GET', url: `/api/requests/${id}/audit` });
      assert.equal(response.statusCode, 200, response.body);
      return response.json() as AuditEntry[];
    },
    async createPolicy(payload) {
      const response = await gate.call({ method: 'POST', url: '/api/policies', payload });
      assert.equal(response.statusCode, 201, response.body);
      return response.json() as { id: string; name: string };
    },
    async deliveriesOf(requestId, platform) {
      const { db } = gate.service.context.database;
      const messages = await db.selectFrom('chat_messages').select('id').where('request_id', '=', requestId).where('platform', '=', platform).execute();
      if (messages.length === 0) return [];
      const bodies = messages.map((message) => JSON.stringify({ message: message.id }));
      return db.selectFrom('deliveries').selectAll().where('kind', '=', platform).where('body', 'in', bodies).orderBy('created_at').orderBy('id').execute();
    },
    slackInteraction(payload, headers = {}) {
      const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
      const timestamp = headers['x-slack-request-timestamp'] ?? seconds();
      return inject(
        '/api/chat/slack/interactions',
        body,
        withoutUndefined({
          'content-type': 'application/x-www-form-urlencoded',
          'x-slack-request-timestamp': timestamp,
          'x-slack-signature': slackSignature(SLACK_SECRET, timestamp, body),
          ...headers,
        }),
      );
    },
    discordInteraction(interaction, headers = {}) {
      const body = JSON.stringify(interaction);
      const timestamp = headers['x-signature-timestamp'] ?? seconds();
      return inject(
        '/api/chat/discord/interactions',
        body,
        withoutUndefined({
          'content-type': 'application/json',
          'x-signature-timestamp': timestamp,
          'x-signature-ed25519': discordSignature(privateKey, timestamp, body),
          ...headers,
        }),
      );
    },
    async close() {
      await gate.close();
      await slack.server.stop();
      await discord.server.stop();
    },
  };
}

/** A Slack block_actions payload: `user` clicked `action` on request `requestId`'s message in the channel. */
export function slackClick(user: string, action: 'vigil_approve' | 'vigil_deny', requestId: string, channel = SLACK_CHANNEL): object {
  return {
    type: 'block_actions',
    trigger_id: `trigger-${user}`,
    user: { id: user, username: `user-${user.toLowerCase()}` },
    channel: { id: channel },
    container: { type: 'message', channel_id: channel, message_ts: '1700000000.000001' },
    actions: [{ type: 'button', action_id: action, block_id: 'decision', value: requestId }],
  };
}

/** A Discord MESSAGE_COMPONENT interaction: a guild member clicked a button. */
export function discordClick(user: string, customId: string, roles: string[] = []): object {
  return {
    type: 3,
    id: 'interaction-1',
    application_id: 'app-1',
    token: 'interaction-token',
    channel_id: DISCORD_CHANNEL,
    member: { user: { id: user, username: `member-${user}` }, roles },
    data: { custom_id: customId, component_type: 2 },
  };
}

/** The gate's link to observe in the budget tests (INTERNAL_SERVICE_TOKEN). */
export const SERVICE_TOKEN = 'service-token-for-chat-budget-tests-0123';

/** What the fake observe answers every spend query with; change it between polls. */
export interface SpendFigure {
  key: string;
  spendUsd: number;
  agentIds: string[];
}

/** Observe as the budgets read it: every spend query answers `figure`, every pause is accepted (and kept in `requests`). */
export function fakeSpendObserve(figure: SpendFigure, now: () => number): TestHttpServer {
  return new TestHttpServer((request, res) => {
    if (request.url !== '/api/internal/spend') return sendJson(res, 200, {});
    const { queries } = JSON.parse(request.body) as { queries: { id: string; window: string }[] };
    sendJson(res, 200, { at: now(), results: queries.map((q) => ({ id: q.id, windowStart: windowStart(q.window, now()), figures: [{ ...figure }] })) });
  });
}

/** A chat gate linked to a fake observe whose spend the test sets; `poll` runs one tick of the budget job. */
export async function startBudgetChatGate(
  backend: TestBackend,
  figure: SpendFigure,
): Promise<{ chat: ChatGate; observe: TestHttpServer; poll(): Promise<void>; close(): Promise<void> }> {
  let now = () => 0;
  const observe = await fakeSpendObserve(figure, () => now()).start();
  const chat = await startChatGate(backend, { OBSERVE_URL: observe.url, INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN });
  now = () => chat.gate.clock.now();
  return {
    chat,
    observe,
    async poll() {
      chat.gate.clock.advance(250);
      assert.equal(await chat.gate.service.jobs.budgets.tick(), true, 'the budget tick ran');
    },
    async close() {
      await chat.close();
      await observe.stop();
    },
  };
}
