import type { ChatPlatformName } from './render.ts';

/**
 * Who may decide from chat. A policy rule's `approvers` that name the platform (`slack:U123`,
 * `slack:S456` for a user group, `discord:42`, `discord:role:7`) are the deciders of the requests
 * it routes; otherwise the platform's configured list (SLACK_DECIDERS, DISCORD_DECIDERS). `*`
 * admits everyone in the channel; an empty list admits no one.
 */
export function decidersFor(platform: ChatPlatformName, approvers: readonly string[], configured: readonly string[]): string[] {
  const prefix = `${platform}:`;
  const own = approvers.filter((approver) => approver.startsWith(prefix)).map((approver) => approver.slice(prefix.length));
  return own.length > 0 ? own : [...configured];
}

/** Slack user group ids start with S (user ids with U or W). */
export function slackGroups(deciders: readonly string[]): string[] {
  return deciders.filter((decider) => /^S[A-Z0-9]+$/.test(decider));
}

/** Whether a Slack user is listed by id (or `*`); user groups are checked by the caller (their members are a Web API call). */
export function slackListed(deciders: readonly string[], userId: string): boolean {
  return deciders.includes('*') || deciders.includes(userId);
}

/** Whether a Discord user may decide: listed by id, one of their roles listed as `role:<id>`, or `*`. */
export function discordMayDecide(deciders: readonly string[], userId: string, roles: readonly string[]): boolean {
  return deciders.includes('*') || deciders.includes(userId) || roles.some((role) => deciders.includes(`role:${role}`));
}

/**
 * Where a request routed to a human is posted: the rule's `channels` entries that name a
 * configured platform (`slack`, `slack:<channel id>`, `discord`, `discord:<channel id>`); when
 * the rule names none, every configured platform's channel.
 */
export function chatTargets(
  channels: readonly string[],
  defaults: Partial<Record<ChatPlatformName, string>>,
): { platform: ChatPlatformName; channel: string }[] {
  const configured = (Object.keys(defaults) as ChatPlatformName[]).filter((platform) => defaults[platform] !== undefined);
  const named = channels.flatMap((entry) => {
    const [platform, ...rest] = entry.split(':') as [string, ...string[]];
    if (!configured.includes(platform as ChatPlatformName)) return [];
    const name = platform as ChatPlatformName;
    return [{ platform: name, channel: rest.length > 0 ? rest.join(':') : defaults[name]! }];
  });
  const targets = named.length > 0 ? named : configured.map((platform) => ({ platform, channel: defaults[platform]! }));
  return targets.filter((target, i) => targets.findIndex((t) => t.platform === target.platform && t.channel === target.channel) === i);
}
