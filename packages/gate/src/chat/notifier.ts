import { newId, ServiceError, type DeliveryOutcome, type DialectName } from '@vigil/platform';
import type { Transaction } from 'kysely';
import { findVerifiedRequest, storedDecision } from '../requests/index.ts';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { ChatMessageRow } from './tables.ts';
import type { DeliveryRow } from '../webhooks/index.ts';
import { outboxRow, type Notice, type OutboxChannel, type Transition } from '../webhooks/index.ts';
import { chatTargets } from './deciders.ts';
import { channelsAt } from '../escalation/index.ts';
import { approvalProgress } from '../approvers/index.ts';
import { ChatApiError, type ChatPlatform } from './platforms.ts';
import { requestView, type ChatPlatformName } from './render.ts';

/** The delivery events: the first post of a request's message, and each edit after a transition. */
const POST = 'chat.post';
const UPDATE = 'chat.update';
/** A notice's post (a grant made, revoked or used up; a budget threshold crossed): posted once, never edited. */
const NOTICE = 'chat.notice';
/**
 * Attempts of a post or edit: with the queue's backoff (2^n s after attempt n) the last comes
 * about 68 minutes after the first, so a platform's outage of up to an hour loses no message.
 */
const CHAT_MAX_ATTEMPTS = 12;

/**
 * Posts requests routed to a human to the chat platforms and edits the messages as the requests
 * change. Every post and edit is a delivery of the gate's outbox (durable, retried with backoff,
 * a platform's 429 Retry-After honoured), written with the transition: a platform that is down
 * never blocks or fails a request. Messages are rendered when sent, from the request as it stands.
 */
export class ChatNotifier implements OutboxChannel {
  readonly kinds: readonly string[];
  readonly maxAttempts = CHAT_MAX_ATTEMPTS;
  private readonly platforms: Map<string, ChatPlatform>;

  constructor(
    private readonly database: GateDatabase,
    platforms: readonly ChatPlatform[],
  ) {
    this.platforms = new Map(platforms.map((platform) => [platform.name, platform]));
    this.kinds = platforms.map((platform) => platform.name);
  }

  platform(name: ChatPlatformName): ChatPlatform | undefined {
    return this.platforms.get(name);
  }

  private defaults(): Partial<Record<ChatPlatformName, string>> {
    return Object.fromEntries([...this.platforms.values()].map((platform) => [platform.name, platform.defaultChannel]));
  }

  /** One post per notice and target channel; the body carries the notice itself (nothing to re-read when it is sent). */
  noticeDeliveries(notices: readonly Notice[], now: number): DeliveryRow[] {
    const defaults = this.defaults();
    return notices.flatMap((notice) =>
      chatTargets(notice.channels, defaults).map(({ platform, channel }) =>
        outboxRow(null, platform, `${platform}:${channel}`, NOTICE, JSON.stringify({ channel, notice }), now),
      ),
    );
  }

  async deliveriesFor(trx: Transaction<GateSchema>, _dialect: DialectName, transitions: readonly Transition[], now: number): Promise<DeliveryRow[]> {
    const defaults = this.defaults();
    const messages: ChatMessageRow[] = [];
    const rows: DeliveryRow[] = [];
    const changed: string[] = [];
    for (const { event, request } of transitions) {
      // An escalation edits the messages already posted (they show the tier) and, like a reminder, posts the request again.
      if (event !== 'request.created' && event !== 'request.reminder') changed.push(request.id);
      if (event !== 'request.created' && event !== 'request.reminder' && event !== 'request.escalated') continue;
      const decision = storedDecision(request);
      if (request.status !== 'pending' || decision.decision !== 'route_to_human') continue;
      for (const { platform, channel } of chatTargets(channelsAt(decision, request.escalation_tier), defaults)) {
        const message = { id: newId(), request_id: request.id, platform, channel, message_id: null, created_at: now };
        messages.push(message);
        rows.push(outboxRow(null, platform, `${platform}:${channel}`, POST, JSON.stringify({ message: message.id }), now));
      }
    }
    if (messages.length > 0) await trx.insertInto('chat_messages').values(messages).execute();
    if (changed.length > 0) {
      const posted = await trx
        .selectFrom('chat_messages')
        .select(['id', 'platform', 'channel'])
        .where('request_id', 'in', [...new Set(changed)])
        .execute();
      // The messages this escalation posts show the request as it stands already.
      const fresh = new Set(messages.map((message) => message.id));
      for (const message of posted.filter((m) => !fresh.has(m.id))) {
        if (this.platforms.has(message.platform))
          rows.push(outboxRow(null, message.platform, `${message.platform}:${message.channel}`, UPDATE, JSON.stringify({ message: message.id }), now));
      }
    }
    return rows;
  }

  async send(row: DeliveryRow): Promise<DeliveryOutcome> {
    if (row.event === NOTICE) {
      const { channel, notice } = JSON.parse(row.body) as { channel: string; notice: Notice };
      const platform = this.platforms.get(row.kind);
      if (platform === undefined) return { ok: false, status: null, error: 'the chat platform is no longer configured' };
      return attempt(() => platform.notify(channel, notice));
    }
    const { message: messageId } = JSON.parse(row.body) as { message: string };
    const { db } = this.database;
    const message = await db.selectFrom('chat_messages').selectAll().where('id', '=', messageId).executeTakeFirst();
    const platform = message === undefined ? undefined : this.platforms.get(message.platform);
    if (message === undefined || platform === undefined) return { ok: false, status: null, error: 'the chat message or its platform is no longer configured' };
    let request: Awaited<ReturnType<typeof findVerifiedRequest>>;
    try {
      request = await findVerifiedRequest(this.database, message.request_id);
    } catch (error) {
      // A row changed outside the gate is not shown to the deciders (requestTampered).
      if (error instanceof ServiceError) return { ok: false, status: null, error: error.message };
      throw error;
    }
    if (request === undefined) return { ok: false, status: null, error: 'the request no longer exists' };
    const view = requestView(request, await approvalProgress(this.database, request));
    // Retried with the backoff: the post, whenever it goes out, shows the request as it then stands.
    if (message.message_id === null && row.event === UPDATE) return { ok: false, status: null, error: 'the message is not posted yet' };
    const posted = message.message_id;
    return attempt(async () => {
      if (posted === null) {
        const answer = await platform.post(message.channel, view);
        await db.updateTable('chat_messages').set({ channel: answer.channel, message_id: answer.messageId }).where('id', '=', message.id).execute();
      } else {
        // A post retried after its message id was stored (the delivery's own settling was lost) edits it
        // instead; a post whose answer never arrived cannot know it went through (docs/chat.md).
        await platform.update(message.channel, posted, view);
      }
    });
  }

  /** The message of a request on a platform, once posted (to answer a click in its channel). */
  async messageOf(requestId: string, platform: ChatPlatformName): Promise<ChatMessageRow | undefined> {
    return this.database.db.selectFrom('chat_messages').selectAll().where('request_id', '=', requestId).where('platform', '=', platform).executeTakeFirst();
  }
}

/** A platform call as a delivery's outcome: the platform's refusals and rate limits (ChatApiError) are retried by the queue. */
async function attempt(call: () => Promise<void>): Promise<DeliveryOutcome> {
  try {
    await call();
    return { ok: true, status: 200, error: null };
  } catch (error) {
    if (!(error instanceof ChatApiError)) throw error;
    return { ok: false, status: error.status, error: error.message, ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }) };
  }
}
