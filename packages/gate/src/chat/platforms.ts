import { constantTimeEqual, fetchWithTimeout, hmacSha256Hex, joinUrl, retryAfterMs, VIGIL_VERSION } from '@vigil/platform';
import type { Logger, WebClient } from '@slack/web-api';
import type { DiscordConfig, SlackConfig } from '../config.ts';
import type { Notice } from '../webhooks/index.ts';
import { discordMessage, discordNotice, slackMessage, slackNotice, slackReasonModal, type ChatPlatformName, type RequestView } from './render.ts';

/** A chat platform's API refused or failed a call; `retryAfterMs` when it asked to wait (429). */
export class ChatApiError extends Error {
  override name = 'ChatApiError';
  constructor(
    message: string,
    readonly status: number | null,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** What the outbox needs of a platform: post a request's message, edit it, post a notice. */
export interface ChatPlatform {
  readonly name: ChatPlatformName;
  readonly defaultChannel: string;
  post(channel: string, view: RequestView): Promise<{ channel: string; messageId: string }>;
  update(channel: string, messageId: string, view: RequestView): Promise<void>;
  notify(channel: string, notice: Notice): Promise<void>;
}

type Log = { warn(object: object, message: string): void; error(object: object, message: string): void };

/** Interaction requests older (or newer) than this are refused: a captured request cannot be replayed later. */
export const SIGNATURE_WINDOW_S = 300;

function fresh(timestampSeconds: string | undefined, nowMs: number): boolean {
  const seconds = Number(timestampSeconds);
  return timestampSeconds !== undefined && /^\d+$/.test(timestampSeconds) && Math.abs(nowMs / 1000 - seconds) <= SIGNATURE_WINDOW_S;
}

/**
 * Slack's request signature: `v0=` + hex HMAC-SHA256(signing secret, `v0:<timestamp>:<raw body>`),
 * compared in constant time, the timestamp within SIGNATURE_WINDOW_S of now. (The one maintained
 * verifier ships inside Bolt, a whole app framework; the recipe is these few lines.)
 */
export function slackSignatureValid(secret: string, headers: { timestamp?: string; signature?: string }, rawBody: string, nowMs: number): boolean {
  if (!fresh(headers.timestamp, nowMs) || headers.signature === undefined) return false;
  return constantTimeEqual(headers.signature, `v0=${hmacSha256Hex(secret, `v0:${headers.timestamp}:${rawBody}`)}`);
}

/** Discord's Ed25519 signature of timestamp + raw body (discord-interactions' verifyKey), the timestamp within SIGNATURE_WINDOW_S of now. */
export async function discordSignatureValid(
  publicKey: string,
  headers: { timestamp?: string; signature?: string },
  rawBody: string,
  nowMs: number,
): Promise<boolean> {
  if (!fresh(headers.timestamp, nowMs) || headers.signature === undefined || !/^[0-9a-f]{128}$/i.test(headers.signature)) return false;
  // Loaded with the first interaction: a gate without Discord never holds it.
  const { verifyKey } = await import('discord-interactions');
  return verifyKey(rawBody, headers.signature, headers.timestamp!, publicKey);
}

type SlackWebApi = typeof import('@slack/web-api');

/** The Slack Web API client's log lines go to the service's log, never to the console. */
function slackLogger({ LogLevel }: SlackWebApi, log: Log): Logger {
  let level = LogLevel.WARN;
  return {
    debug() {},
    info() {},
    warn: (...message: unknown[]) => log.warn({ platform: 'slack' }, message.map(String).join(' ')),
    error: (...message: unknown[]) => log.error({ platform: 'slack' }, message.map(String).join(' ')),
    setLevel: (next) => (level = next),
    getLevel: () => level,
    setName() {},
  };
}

/** The Web API client's errors as ChatApiError: rate limits with their Retry-After, HTTP statuses, Slack's own error codes. */
function slackFailure({ ErrorCode }: SlackWebApi, error: unknown): ChatApiError {
  const failure = error as { code?: string; retryAfter?: number; statusCode?: number; data?: { error?: string }; message?: string };
  switch (failure.code) {
    case ErrorCode.RateLimitedError:
      return new ChatApiError('Slack rate limited the call', 429, (failure.retryAfter ?? 1) * 1000);
    case ErrorCode.HTTPError:
      return new ChatApiError(`Slack answered HTTP ${failure.statusCode}`, failure.statusCode ?? null);
    case ErrorCode.PlatformError:
      return new ChatApiError(`Slack refused the call: ${failure.data?.error ?? 'unknown error'}`, 200);
    default:
      return new ChatApiError(`Slack could not be reached: ${failure.message ?? String(error)}`, null);
  }
}

/** Slack through the official Web API client; retries are the delivery queue's, so the client makes none. */
export class SlackPlatform implements ChatPlatform {
  readonly name = 'slack' as const;
  readonly defaultChannel: string;
  private readonly client: WebClient;

  /** The Web API client (and its HTTP stack) is loaded only when Slack is configured. */
  static async create(config: SlackConfig, timeoutMs: number, log: Log): Promise<SlackPlatform> {
    return new SlackPlatform(await import('@slack/web-api'), config, timeoutMs, log);
  }

  private constructor(
    private readonly slack: SlackWebApi,
    config: SlackConfig,
    timeoutMs: number,
    log: Log,
  ) {
    const { LogLevel, WebClient } = slack;
    this.defaultChannel = config.channel;
    this.client = new WebClient(config.botToken, {
      slackApiUrl: config.apiUrl.endsWith('/') ? config.apiUrl : `${config.apiUrl}/`,
      timeout: timeoutMs,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: slackLogger(slack, log),
      logLevel: LogLevel.WARN,
    });
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw slackFailure(this.slack, error);
    }
  }

  async post(channel: string, view: RequestView): Promise<{ channel: string; messageId: string }> {
    const result = await this.call(() => this.client.chat.postMessage({ channel, ...slackMessage(view) } as never));
    if (typeof result.ts !== 'string') throw new ChatApiError('Slack answered without the message ts', 200);
    return { channel: typeof result.channel === 'string' ? result.channel : channel, messageId: result.ts };
  }

  async update(channel: string, messageId: string, view: RequestView): Promise<void> {
    await this.call(() => this.client.chat.update({ channel, ts: messageId, ...slackMessage(view) } as never));
  }

  async notify(channel: string, notice: Notice): Promise<void> {
    await this.call(() => this.client.chat.postMessage({ channel, ...slackNotice(notice) } as never));
  }

  async ephemeral(channel: string, user: string, text: string): Promise<void> {
    await this.call(() => this.client.chat.postEphemeral({ channel, user, text }));
  }

  async openReasonModal(triggerId: string, view: RequestView, decision: 'approved' | 'denied', channel: string): Promise<void> {
    await this.call(() => this.client.views.open({ trigger_id: triggerId, view: slackReasonModal(view, decision, channel) as never }));
  }

  async groupMembers(group: string): Promise<string[]> {
    const result = await this.call(() => this.client.usergroups.users.list({ usergroup: group }));
    return result.users ?? [];
  }
}

/**
 * Discord through its REST API (two calls: create and edit a channel message) with the bot token;
 * a 429's wait (Retry-After, or the body's retry_after) goes back to the delivery queue.
 */
export class DiscordPlatform implements ChatPlatform {
  readonly name = 'discord' as const;
  readonly defaultChannel: string;

  constructor(
    private readonly config: DiscordConfig,
    private readonly timeoutMs: number,
  ) {
    this.defaultChannel = config.channel;
  }

  private async request(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<Record<string, unknown>> {
    let response: Response;
    try {
      response = await fetchWithTimeout(joinUrl(this.config.apiUrl, path), {
        method,
        headers: {
          authorization: `Bot ${this.config.botToken}`,
          'content-type': 'application/json',
          'user-agent': `DiscordBot (https://github.com/vigil-dev/vigil, ${VIGIL_VERSION})`,
        },
        body: JSON.stringify(body),
        timeoutMs: this.timeoutMs,
      });
    } catch (error) {
      throw new ChatApiError(
        `Discord could not be reached: ${(error as Error).name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : (error as Error).message}`,
        null,
      );
    }
    const text = await response.text().catch(() => '');
    let json: Record<string, unknown> = {};
    try {
      json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      // A non-JSON answer: the status says enough.
    }
    if (response.status === 429) {
      const wait =
        retryAfterMs(response.headers.get('retry-after'), Date.now()) ?? (typeof json.retry_after === 'number' ? json.retry_after * 1000 : undefined);
      throw new ChatApiError('Discord rate limited the call', 429, wait);
    }
    if (!response.ok)
      throw new ChatApiError(`Discord answered HTTP ${response.status}${typeof json.message === 'string' ? `: ${json.message}` : ''}`, response.status);
    return json;
  }

  async post(channel: string, view: RequestView): Promise<{ channel: string; messageId: string }> {
    const message = await this.request('POST', `/channels/${encodeURIComponent(channel)}/messages`, discordMessage(view));
    if (typeof message.id !== 'string') throw new ChatApiError('Discord answered without the message id', 200);
    return { channel, messageId: message.id };
  }

  async notify(channel: string, notice: Notice): Promise<void> {
    await this.request('POST', `/channels/${encodeURIComponent(channel)}/messages`, discordNotice(notice));
  }

  async update(channel: string, messageId: string, view: RequestView): Promise<void> {
    await this.request('PATCH', `/channels/${encodeURIComponent(channel)}/messages/${encodeURIComponent(messageId)}`, discordMessage(view));
  }
}
