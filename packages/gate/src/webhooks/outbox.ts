import {
  BulkInserter,
  DeliveryQueue,
  fetchWithTimeout,
  hmacSha256Hex,
  joinUrl,
  newDelivery,
  PreparedQuery,
  toIso,
  toIsoOrNull,
  type Clock,
  type DeliveryOutcome,
  type DialectName,
} from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { GateConfig } from '../config.ts';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { RequestRow } from '../requests/index.ts';
import type { DeliveryRow } from './tables.ts';
import { signDelivery } from './signature.ts';

export const WEBHOOK_EVENTS = [
  'request.created',
  'request.decided',
  'request.expired',
  'request.confirmed',
  'request.redeemed',
  'request.escalated',
  'request.reminder',
  'request.voted',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The `data` of every delivery: the request as it stood when the event happened. */
export function deliveryData(request: RequestRow): Record<string, unknown> {
  return {
    id: request.id,
    action: request.action,
    status: request.status,
    params: JSON.parse(request.params) as unknown,
    decidedBy: request.decided_by,
    decisionReason: request.decision_reason,
    createdAt: toIso(request.created_at),
    decidedAt: toIsoOrNull(request.decided_at),
  };
}

/** The event observe's `/api/events/ingest` expects for a gate event, or null when observe has no such event. */
function observeEvent(event: WebhookEvent, request: RequestRow): { name: string; data: Record<string, unknown> } | null {
  const outcome = {
    requestId: request.id,
    action: request.action,
    decidedBy: request.decided_by,
    ...(request.decision_reason !== null && { reason: request.decision_reason }),
  };
  if (event === 'request.created') {
    return {
      name: 'request.created',
      data: { requestId: request.id, action: request.action, params: JSON.parse(request.params) as unknown, urgency: request.urgency },
    };
  }
  if (event === 'request.decided' && (request.status === 'approved' || request.status === 'denied')) {
    return { name: `request.${request.status}`, data: outcome };
  }
  if (event === 'request.expired') return { name: 'request.expired', data: outcome };
  // Observe has no event type of its own for a redemption: a custom event, in the request's session (webhook-ingest/mapping.ts).
  if (event === 'request.redeemed') {
    return { name: 'request.redeemed', data: { type: 'approval_redeemed', requestId: request.id, data: { requestId: request.id, action: request.action } } };
  }
  return null;
}

/**
 * Whether the agent records this request's approval events in its own session (the SDK's
 * withApproval does: `context.recordedByAgent` with the `context.sessionId` it records in). The
 * gate then forwards none of them, so the session holds each fact once, in the order the agent
 * recorded it; without a session to record in, the gate's copy is the only one and is forwarded.
 */
function agentRecordsEvents(context: Record<string, unknown>): boolean {
  return context.recordedByAgent === true && typeof context.sessionId === 'string';
}

/** Observe's copy of a transition (the body `/api/events/ingest` takes), or null when observe gets none. */
function observeCopy(event: WebhookEvent, request: RequestRow, now: number): { event: string; body: string } | null {
  const forwarded = observeEvent(event, request);
  if (!forwarded) return null;
  const context = JSON.parse(request.context) as Record<string, unknown>;
  if (agentRecordsEvents(context)) return null;
  const correlation = {
    ...(typeof context.sessionId === 'string' && { service_session_id: context.sessionId }),
    ...(typeof context.agentId === 'string' && { service_agent_id: context.agentId }),
  };
  return {
    event: forwarded.name,
    body: JSON.stringify({ source: 'approval_gate', event: forwarded.name, data: forwarded.data, timestamp: toIso(now), context: correlation }),
  };
}

/** A state change to report: the event and the request as it stood right after it. */
export interface Transition {
  event: WebhookEvent;
  request: RequestRow;
}

/** A grant as a notice shows it (grants/). */
interface GrantNotice {
  id: string;
  action: string;
  agentId: string | null;
  sessionId: string | null;
  expiresAt: number | null;
  maxUses: number | null;
  uses: number;
  /** Who made or revoked it; for a grant used up, the request that took its last use. */
  by: string;
}

/** A budget's threshold crossed, as a notice shows it (budgets/). */
interface BudgetNotice {
  id: string;
  name: string;
  level: 'soft' | 'hard';
  thresholdUsd: number;
  spendUsd: number;
  window: string;
  /** The figure's key: the agent, session or tag, `*` for the tenant. */
  key: string;
  /** The agents paused by a hard breach (none for a soft one, or with pauseOnHard off). */
  pausedAgents: string[];
}

/**
 * A fact for the people deciding that is not a request's transition: a grant made, revoked or used
 * up, a budget threshold crossed. `channels` as a rule's (`slack`, `slack:<id>`, …); empty: each
 * configured platform's channel.
 */
export type Notice =
  | { event: 'grant.created' | 'grant.revoked' | 'grant.used_up'; channels: readonly string[]; grant: GrantNotice }
  | { event: 'budget.breached'; channels: readonly string[]; budget: BudgetNotice };

/**
 * Another destination of the request transitions and of notices (chat/): its deliveries join the
 * outbox in the transaction of the change, under its own delivery kinds, and it sends them itself.
 */
export interface OutboxChannel {
  readonly kinds: readonly string[];
  /** Attempts before one of its deliveries is given up (its own budget, not WEBHOOK_MAX_RETRIES). */
  readonly maxAttempts: number;
  deliveriesFor(trx: Transaction<GateSchema>, dialect: DialectName, transitions: readonly Transition[], now: number): Promise<DeliveryRow[]>;
  noticeDeliveries(notices: readonly Notice[], now: number): DeliveryRow[];
  send(row: DeliveryRow): Promise<DeliveryOutcome>;
}

/**
 * What `enqueue` wrote, for `dispatch` after commit: observe's copies (`observe`) go out in batches,
 * the other deliveries (`each`) one request apiece.
 */
export interface Enqueued {
  each: string[];
  observe: string[];
}

/** The outcome of each element of observe's batch answer (POST /api/events/ingest/batch). */
interface ObserveBatchAnswer {
  results?: ({ ok: true } | { ok: false; error: string })[];
}

/** An outbox row of `kind` for `event`, due now. */
export function outboxRow(webhookId: string | null, kind: string, url: string, event: string, body: string, now: number): DeliveryRow {
  return { ...newDelivery(url, body, now), webhook_id: webhookId, kind, event };
}

const selectEnabledWebhooks = new PreparedQuery((db: Kysely<GateSchema>, _dialect, enabled: number) =>
  db.selectFrom('webhooks').select(['id', 'url', 'events']).where('enabled', '=', enabled),
);

const DELIVERY_COLUMNS = {
  id: 'text',
  webhook_id: 'text',
  kind: 'text',
  url: 'text',
  event: 'text',
  body: 'text',
  status: 'text',
  attempts: 'integer',
  next_attempt_at: 'bigint',
  claimed_until: 'bigint',
  last_error: 'text',
  response_status: 'integer',
  created_at: 'bigint',
  delivered_at: 'bigint',
} as const;
const deliveryInserter = new BulkInserter<GateSchema, 'deliveries'>('deliveries', DELIVERY_COLUMNS);

/**
 * The webhook outbox: deliveries are rows of the platform's DeliveryQueue, written in the same
 * transaction as the state change they report. Attempt 1 starts right after commit (never awaited
 * by the API request); retries and the scanner are the queue's. Gate webhooks are signed with
 * their secret (X-Gate-Signature); observe's copies with OBSERVE_WEBHOOK_SECRET (X-Webhook-Signature).
 */
export class Outbox {
  private readonly queue: DeliveryQueue<GateSchema, 'deliveries'>;

  constructor(
    private readonly database: GateDatabase,
    private readonly config: GateConfig,
    private readonly clock: Clock,
    log: FastifyBaseLogger,
    private readonly channels: readonly OutboxChannel[] = [],
  ) {
    this.queue = new DeliveryQueue({
      db: database.db,
      table: 'deliveries',
      clock,
      log,
      timeoutMs: config.webhooks.timeoutMs,
      maxAttempts: (row) => this.channelOf(row)?.maxAttempts ?? config.webhooks.maxAttempts,
      retryTimers: true,
      headers: (row) => this.headers(row),
      send: (row) => this.channelOf(row)?.send(row),
      sendBatch: (rows) => this.sendObserveBatch(rows),
    });
  }

  private channelOf(row: DeliveryRow): OutboxChannel | undefined {
    return this.channels.find((channel) => channel.kinds.includes(row.kind));
  }

  /**
   * In the caller's transaction: for each transition (the request as it stood right after it), one
   * delivery per enabled webhook subscribed to the event, plus observe's copy and the channels'. Returns the ids to
   * `dispatch` after commit.
   */
  async enqueue(trx: Transaction<GateSchema>, dialect: DialectName, transitions: readonly Transition[]): Promise<Enqueued> {
    const now = this.clock.now();
    const hooks = (await selectEnabledWebhooks.execute(trx, dialect, 1)).map((h) => ({ ...h, events: JSON.parse(h.events) as string[] }));
    const observe = this.config.observe?.webhookSecret ? this.config.observe : undefined;
    const rows: DeliveryRow[] = [];
    for (const { event, request } of transitions) {
      const subscribed = hooks.filter((hook) => hook.events.includes(event));
      if (subscribed.length > 0) {
        const body = JSON.stringify({ event, timestamp: toIso(now), data: deliveryData(request) });
        for (const hook of subscribed) rows.push(outboxRow(hook.id, 'webhook', hook.url, event, body, now));
      }
      const copy = observe ? observeCopy(event, request, now) : null;
      if (observe && copy) rows.push(outboxRow(null, 'observe', joinUrl(observe.url, '/api/events/ingest'), copy.event, copy.body, now));
    }
    for (const channel of this.channels) rows.push(...(await channel.deliveriesFor(trx, dialect, transitions, now)));
    if (rows.length > 0) await deliveryInserter.insert(trx, dialect, rows);
    const enqueued: Enqueued = { each: [], observe: [] };
    for (const row of rows) (row.kind === 'observe' ? enqueued.observe : enqueued.each).push(row.id);
    return enqueued;
  }

  /** In the caller's transaction: the channels' deliveries of these notices. Returns the ids to `dispatch` after commit. */
  async announce(trx: Transaction<GateSchema>, notices: readonly Notice[]): Promise<Enqueued> {
    const now = this.clock.now();
    const rows = this.channels.flatMap((channel) => channel.noticeDeliveries(notices, now));
    if (rows.length > 0) await deliveryInserter.insert(trx, this.database.dialect, rows);
    return { each: rows.map((row) => row.id), observe: [] };
  }

  /**
   * Runs `change`, which writes its notices with `announce` inside the transaction it opens, and
   * attempts their deliveries once it has returned (after its commit; nothing after a rollback).
   */
  async withNotices<T>(change: (announce: (trx: Transaction<GateSchema>, notices: readonly Notice[]) => Promise<void>) => Promise<T>): Promise<T> {
    const written: Enqueued[] = [];
    const result = await change(async (trx, notices) => {
      if (notices.length > 0) written.push(await this.announce(trx, notices));
    });
    for (const enqueued of written) this.dispatch(enqueued);
    return result;
  }

  /**
   * First attempts of observe's copies, many per request: one signed POST /api/events/ingest/batch
   * whose elements are the rows' bodies as stored (each what /api/events/ingest takes on a retry),
   * and an outcome per row from observe's per-element answer.
   */
  private async sendObserveBatch(rows: DeliveryRow[]): Promise<DeliveryOutcome[]> {
    const observe = this.config.observe;
    const secret = observe?.webhookSecret;
    if (!observe || !secret) return rows.map(() => ({ ok: false, status: null, error: 'observe forwarding is no longer configured' }));
    const body = `{"source":"approval_gate","events":[${rows.map((row) => row.body).join(',')}]}`;
    const { timeoutMs } = this.config.webhooks;
    try {
      const response = await fetchWithTimeout(joinUrl(observe.url, '/api/events/ingest/batch'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacSha256Hex(secret, body) },
        body,
        timeoutMs,
      });
      const answer = (await response.json().catch(() => ({}))) as ObserveBatchAnswer;
      const results = answer.results;
      if (!response.ok || !Array.isArray(results) || results.length !== rows.length) {
        const error = response.ok ? 'observe answered the batch without a result per event' : `HTTP ${response.status}`;
        return rows.map(() => ({ ok: false, status: response.status, error }));
      }
      return results.map((result) =>
        result.ok
          ? { ok: true, status: response.status, error: null }
          : { ok: false, status: response.status, error: `observe refused the event: ${result.error}` },
      );
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (error as Error).message;
      return rows.map(() => ({ ok: false, status: null, error: reason }));
    }
  }

  private async headers(delivery: DeliveryRow): Promise<Record<string, string> | { refuse: string }> {
    if (delivery.kind === 'observe') {
      const secret = this.config.observe?.webhookSecret;
      return secret ? { 'x-webhook-signature': hmacSha256Hex(secret, delivery.body) } : {};
    }
    // A channel's delivery reaches here only when its channel is gone from the configuration.
    if (delivery.kind !== 'webhook') return { refuse: `${delivery.kind} is no longer configured` };
    const hook = delivery.webhook_id
      ? await this.database.db.selectFrom('webhooks').select(['secret']).where('id', '=', delivery.webhook_id).executeTakeFirst()
      : undefined;
    if (!hook) return { refuse: 'the webhook was deleted' };
    const timestamp = Math.floor(this.clock.now() / 1000);
    return {
      'x-gate-event': delivery.event,
      'x-gate-delivery': delivery.id,
      'x-gate-timestamp': String(timestamp),
      ...(hook.secret && { 'x-gate-signature': signDelivery(hook.secret, timestamp, delivery.body) }),
    };
  }

  /** After commit: attempt these deliveries now, in the background (observe's copies batched with others of theirs). */
  dispatch(enqueued: Enqueued): void {
    this.queue.dispatch(enqueued.each);
    if (enqueued.observe.length > 0) this.queue.dispatchBatch(enqueued.observe);
  }

  /** Scanner tick: every delivery due and unclaimed. */
  deliverDue(): Promise<number> {
    return this.queue.deliverDue();
  }

  /** Stops retry timers and waits for attempts in flight (graceful shutdown). */
  stop(): Promise<void> {
    return this.queue.stop();
  }
}
