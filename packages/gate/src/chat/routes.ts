import type { ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { discordSignatureValid, slackSignatureValid } from './platforms.ts';
import { firstReceipt } from './seen.ts';
import type { ChatInteractions, DiscordInteraction, SlackInteraction } from './service.ts';

const FORM = 'application/x-www-form-urlencoded';

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A platform's interaction route: no key, the platform's signature instead (401 when it does not verify). */
function interactionOptions(schema: { operationId: string; summary: string; description: string }) {
  return { config: { auth: 'public' as const }, schema: { ...schema, errorStatuses: [401, 415], tags: ['chat'], response: { 200: z.unknown() } } };
}

/**
 * The chat platforms' interaction endpoints. They take no API key: each request is authenticated
 * by its platform's signature over the raw body (checked before anything is parsed), so each
 * route keeps the body as the bytes arrived, in its own encapsulated context.
 */
export async function registerChatRoutes(app: ZodApp, ctx: GateContext, interactions: ChatInteractions): Promise<void> {
  const { slack, discord } = ctx.config.chat;
  if (slack !== undefined) {
    await app.register(async (scope) => {
      scope.addContentTypeParser(FORM, { parseAs: 'string' }, (_request, body, done) => done(null, body));
      scope.post(
        '/api/chat/slack/interactions',
        interactionOptions({
          operationId: 'slackInteraction',
          summary: "Slack's interactivity requests: Approve / Deny clicks and reason modals (signed by Slack)",
          description:
            "Set as the Request URL of the Slack app's Interactivity. Body: Slack's form-encoded `payload`. " +
            'Authenticated by `X-Slack-Signature` (v0 HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<body>` with the signing secret, timestamp within 5 minutes, not received before): 401 otherwise, and nothing is decided. ' +
            'Answers 200 with no body (the message is edited through the outbox; a refusal is an ephemeral note only the clicker sees); ' +
            'to a reason modal, `{response_action: "errors", errors}` when the reason is missing or the decision refused. docs/chat.md.',
        }),
        async (request, reply) => {
          const raw = typeof request.body === 'string' ? request.body : '';
          const headers = { timestamp: header(request.headers['x-slack-request-timestamp']), signature: header(request.headers['x-slack-signature']) };
          if (!slackSignatureValid(slack.signingSecret, headers, raw, ctx.clock.now())) throw gateError('chatSignature');
          if (!(await firstReceipt(ctx.database, 'slack', headers.timestamp!, raw, ctx.clock.now()))) throw gateError('chatReplay');
          let payload: SlackInteraction;
          try {
            payload = JSON.parse(new URLSearchParams(raw).get('payload') ?? '') as SlackInteraction;
          } catch {
            throw gateError('validation', 'The body has no JSON `payload` field');
          }
          const answer = await interactions.slack(payload);
          return answer === undefined ? reply.status(200).send() : answer;
        },
      );
    });
  }
  if (discord !== undefined) {
    await app.register(async (scope) => {
      scope.removeContentTypeParser('application/json');
      scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
      scope.post(
        '/api/chat/discord/interactions',
        interactionOptions({
          operationId: 'discordInteraction',
          summary: "Discord's interactions: PING, Approve / Deny clicks and reason modals (signed by Discord)",
          description:
            "Set as the Interactions Endpoint URL of the Discord application. Authenticated by `X-Signature-Ed25519` over `<X-Signature-Timestamp><body>` with the application's public key (timestamp within 5 minutes, not received before): 401 otherwise, and nothing is decided. " +
            'Answers an interaction response: `{type: 1}` to a PING; `{type: 7, data}` the message edited to show the decision; `{type: 9, data}` the reason modal when the rule requires one; ' +
            '`{type: 4, data: {content, flags: 64}}` an ephemeral note (refused, already decided, unknown request). docs/chat.md.',
        }),
        async (request) => {
          const raw = typeof request.body === 'string' ? request.body : '';
          const headers = { timestamp: header(request.headers['x-signature-timestamp']), signature: header(request.headers['x-signature-ed25519']) };
          if (!(await discordSignatureValid(discord.publicKey, headers, raw, ctx.clock.now()))) throw gateError('chatSignature');
          if (!(await firstReceipt(ctx.database, 'discord', headers.timestamp!, raw, ctx.clock.now()))) throw gateError('chatReplay');
          let interaction: DiscordInteraction;
          try {
            interaction = JSON.parse(raw) as DiscordInteraction;
          } catch {
            throw gateError('invalidJson');
          }
          return interactions.discord(interaction);
        },
      );
    });
  }
}
