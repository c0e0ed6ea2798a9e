import { environmentSlice, httpUrl, parseServiceEnvironment, positiveInt, schemaName, serviceBaseConfig } from '@vigil/platform';
import type { ServiceBaseConfig, ServiceEnvironment, ServiceOverrides } from '@vigil/platform';
import { z } from 'zod';

const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

/** Each chat platform is on when all of its required variables are set; some but not all is a configuration error. */
const CHAT_REQUIRED = {
  SLACK: ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_CHANNEL_ID'],
  DISCORD: ['DISCORD_BOT_TOKEN', 'DISCORD_PUBLIC_KEY', 'DISCORD_CHANNEL_ID'],
} as const;

/** The variables only the gate reads; docs/deploy.md lists them with the shared ones (docs/chat.md the chat ones). */
export const gateEnvironment = environmentSlice(
  {
    GATE_DB_SCHEMA: schemaName.default('gate'),
    GATE_ADMIN_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .optional(),
    WEBHOOK_TIMEOUT_MS: positiveInt.default(5000),
    WEBHOOK_MAX_RETRIES: z.coerce.number().int().min(1).max(20).default(3),
    WEBHOOK_SCAN_INTERVAL_MS: positiveInt.default(30_000),
    EXPIRY_SCAN_INTERVAL_MS: positiveInt.default(5000),
    GATE_CACHE_REFRESH_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
    /** Claude Code's permission prompt tool has no URL to carry `?wait=`: how long it waits for a human (keep it below the MCP tool timeout). */
    CLAUDE_CODE_PROMPT_WAIT_SECONDS: z.coerce.number().min(0).max(600).default(55),
    OBSERVE_URL: httpUrl.optional(),
    OBSERVE_WEBHOOK_SECRET: z.string().min(1).optional(),
    SLACK_BOT_TOKEN: z.string().min(1).optional(),
    SLACK_SIGNING_SECRET: z.string().min(1).optional(),
    SLACK_CHANNEL_ID: z.string().min(1).optional(),
    /** The Slack Web API's base (tests point it at a local fake). */
    SLACK_API_URL: httpUrl.default('https://slack.com/api/'),
    /** Who may decide from Slack unless a policy rule names its own: user ids, user group ids (S…), or `*`. */
    SLACK_DECIDERS: commaList.default([]),
    DISCORD_BOT_TOKEN: z.string().min(1).optional(),
    DISCORD_PUBLIC_KEY: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be the application's public key: 64 hex digits")
      .optional(),
    DISCORD_CHANNEL_ID: z.string().min(1).optional(),
    /** The Discord REST API's base (tests point it at a local fake). */
    DISCORD_API_URL: httpUrl.default('https://discord.com/api/v10'),
    /** Who may decide from Discord unless a policy rule names its own: user ids, `role:<role id>`, or `*`. */
    DISCORD_DECIDERS: commaList.default([]),
    /** Where requests name their data subject (erasure, DELETE /api/subjects/:id): comma-separated paths, `params.` or `context.` first. */
    GATE_SUBJECT_PATHS: commaList
      .default(['context.subjectId'])
      .pipe(z.array(z.string().regex(/^(params|context)(\.[^.]+)+$/, 'each path starts with params. or context.'))),
  },
  (env) =>
    Object.values(CHAT_REQUIRED).flatMap((names) => {
      const missing = names.filter((name) => env[name] === undefined);
      return missing.length > 0 && missing.length < names.length
        ? missing.map((variable) => ({ variable, message: `is required with ${names.filter((name) => !missing.includes(name)).join(' and ')}` }))
        : [];
    }),
);

export type GateEnvironment = ServiceEnvironment<typeof gateEnvironment.shape>;

export interface GateConfig extends ServiceBaseConfig {
  adminKey?: string;
  redisUrl?: string;
  webhooks: { timeoutMs: number; maxAttempts: number; scanIntervalMs: number };
  expiryScanIntervalMs: number;
  /** How long an instance trusts its cached API keys and policy set before re-checking the database (changes made through this instance apply at once). */
  cacheRefreshMs: number;
  /** Seconds the Claude Code permission prompt tool waits for a human unless its request says `?wait=`. */
  claudeCodePromptWaitSeconds: number;
  /** Forwarding of request events to the observe service, when OBSERVE_URL and OBSERVE_WEBHOOK_SECRET are set. */
  observe?: { url: string; webhookSecret?: string; serviceToken?: string };
  /** Approvals from chat (chat/): each platform when configured. */
  chat: { slack?: SlackConfig; discord?: DiscordConfig };
  /** Data subjects (erasure/): the paths that name a request's subject and the key their ids are hashed under (SUBJECT_HASH_KEY, shared with observe). */
  subjects: { paths: string[]; hashKey?: string };
}

export interface SlackConfig {
  botToken: string;
  signingSecret: string;
  channel: string;
  apiUrl: string;
  deciders: string[];
}

export interface DiscordConfig {
  botToken: string;
  publicKey: string;
  channel: string;
  apiUrl: string;
  deciders: string[];
}

/** The gate's configuration from an environment already checked (by the CLI's whole schema or gateConfigFromEnvironment). */
export function gateConfig(e: GateEnvironment, overrides: ServiceOverrides = {}): GateConfig {
  return {
    ...serviceBaseConfig(e, { port: e.GATE_PORT, sqliteFile: 'gate.db', schema: e.GATE_DB_SCHEMA }, overrides),
    adminKey: e.GATE_ADMIN_KEY,
    redisUrl: e.REDIS_URL,
    webhooks: { timeoutMs: e.WEBHOOK_TIMEOUT_MS, maxAttempts: e.WEBHOOK_MAX_RETRIES, scanIntervalMs: e.WEBHOOK_SCAN_INTERVAL_MS },
    expiryScanIntervalMs: e.EXPIRY_SCAN_INTERVAL_MS,
    cacheRefreshMs: e.GATE_CACHE_REFRESH_MS,
    claudeCodePromptWaitSeconds: e.CLAUDE_CODE_PROMPT_WAIT_SECONDS,
    subjects: { paths: e.GATE_SUBJECT_PATHS, hashKey: e.SUBJECT_HASH_KEY },
    observe: e.OBSERVE_URL ? { url: e.OBSERVE_URL, webhookSecret: e.OBSERVE_WEBHOOK_SECRET, serviceToken: e.INTERNAL_SERVICE_TOKEN } : undefined,
    chat: {
      ...(e.SLACK_BOT_TOKEN && e.SLACK_SIGNING_SECRET && e.SLACK_CHANNEL_ID
        ? {
            slack: {
              botToken: e.SLACK_BOT_TOKEN,
              signingSecret: e.SLACK_SIGNING_SECRET,
              channel: e.SLACK_CHANNEL_ID,
              apiUrl: e.SLACK_API_URL,
              deciders: e.SLACK_DECIDERS,
            },
          }
        : {}),
      ...(e.DISCORD_BOT_TOKEN && e.DISCORD_PUBLIC_KEY && e.DISCORD_CHANNEL_ID
        ? {
            discord: {
              botToken: e.DISCORD_BOT_TOKEN,
              publicKey: e.DISCORD_PUBLIC_KEY.toLowerCase(),
              channel: e.DISCORD_CHANNEL_ID,
              apiUrl: e.DISCORD_API_URL,
              deciders: e.DISCORD_DECIDERS,
            },
          }
        : {}),
    },
  };
}

/** The gate's configuration from the shared variables and its own (tests, and embedding the gate without the CLI). */
export function gateConfigFromEnvironment(env: NodeJS.ProcessEnv, overrides: ServiceOverrides = {}): GateConfig {
  return gateConfig(parseServiceEnvironment(gateEnvironment, env), overrides);
}
