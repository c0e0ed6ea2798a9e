// Approvals from chat: requests routed to a human are posted to Slack and Discord, decided by a
// click there, and the messages edited as the requests change (docs/chat.md).
import { defineFeature } from '@vigil/platform';
import type { GateConfig } from '../config.ts';
import type { GateFeature } from '../context.ts';
import type { ApproverDirectory } from '../approvers/index.ts';
import type { RequestService } from '../requests/index.ts';
import type { GateDatabase } from '../schema.ts';
import { ChatNotifier } from './notifier.ts';
import { DiscordPlatform, SlackPlatform, type ChatPlatform } from './platforms.ts';
import { registerChatRoutes } from './routes.ts';
import { ChatInteractions } from './service.ts';

export { chatMigrations } from './migrations.ts';
export { ChatNotifier } from './notifier.ts';
export type { ChatTables } from './tables.ts';

/** The notifier of the configured platforms (the outbox sends through it), or null when no platform is configured. */
export async function chatNotifier(config: GateConfig, database: GateDatabase, log: Parameters<typeof SlackPlatform.create>[2]): Promise<ChatNotifier | null> {
  const { slack, discord } = config.chat;
  const timeoutMs = config.webhooks.timeoutMs;
  const platforms: ChatPlatform[] = [];
  if (slack !== undefined) platforms.push(await SlackPlatform.create(slack, timeoutMs, log));
  if (discord !== undefined) platforms.push(new DiscordPlatform(discord, timeoutMs));
  return platforms.length === 0 ? null : new ChatNotifier(database, platforms);
}

/** The interaction endpoints of the configured platforms (none without a notifier). */
export const chatFeature = (notifier: ChatNotifier | null, requests: RequestService, approvers: ApproverDirectory): GateFeature =>
  defineFeature('chat', async ({ app, context }) => {
    if (notifier === null) return;
    const { slack, discord } = context.config.chat;
    for (const [name, deciders] of [
      ['SLACK_DECIDERS', slack?.deciders],
      ['DISCORD_DECIDERS', discord?.deciders],
    ] as const) {
      if (deciders !== undefined && deciders.length === 0)
        app.log.warn(`${name} is empty: chat clicks are refused unless a policy rule names its approvers (docs/chat.md)`);
    }
    await registerChatRoutes(app, context, new ChatInteractions(context.config, requests, notifier, app.log, approvers));
  });
