import {
  BulkInserter,
  fetchWithTimeout,
  hmacSha256Hex,
  joinUrl,
  newId,
  PreparedQuery,
  toIso,
  type Clock,
  type DialectName,
  type GateConfig,
} from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { DeliveryRow, GateDatabase, GateSchema, RequestRow } from '../schema.ts';
import { signDelivery } from './signature.ts';

export const WEBHOOK_EVENTS = ['request.created', 'request.decided', 'request.expired', 'request.confirmed'] as const;
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
    decidedAt: request.decided_at === null ? null : toIso(request.decided_at),
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
    return { name: 'request.created', data: { requestId: request.id, action: request.action, params: JSON.parse(request.params) as unknown, urgency: request.urgency } };
  }
  if (event === 'request.decided' && (request.status === 'approved' || request.status === 'denied')) {
    return { name: `request.${request.status}`, data: outcome };
  }
  if (event === 'request.expired') return { name: 'request.expired', data: outcome };
  return null;
}

const CLAIM_SLACK_MS = 5000;

/** A state change to report: the event and the request as it stood right after it. */
export interface Transition {
  event: WebhookEvent;
  request: RequestRow;
}

const selectEnabledWebhooks = new PreparedQuery((db: Kysely<GateSchema>, _dialect, enabled: number) =>
  db.selectFrom('webhooks').select(['id', 'url', 'events']).where('enabled', '=', enabled),
);

const DELIVERY_COLUMNS: (keyof DeliveryRow)[] = [
  'id', 'webhook_id', 'kind', 'url', 'event', 'body', 'status', 'attempts', 'next_attempt_at', 'claimed_until', 'last_error',
  'response_status', 'created_at', 'delivered_at',
];
const deliveryInserter = new BulkInserter<DeliveryRow>('deliveries', DELIVERY_COLUMNS);

/**
 * The webhook outbox. Deliveries are rows written in the same transaction as the state change
 * they report, so none is lost: attempt 1 starts right after commit (never awaited by the API
 * request), a failed attempt n is retried 2^n s later, and a scanner picks up anything due (after
 * a restart too). Each attempt first claims its row, so instances never send the same attempt twice.
 */
export class Outbox {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly database: GateDatabase,
    private readonly config: GateConfig,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * In the caller's transaction: for each transition (the request as it stood right after it), one
   * delivery per enabled webhook subscribed to the event, plus observe's copy. Returns the ids to
   * `dispatch` after commit.
   */
  async enqueue(trx: Kysely<GateSchema>, dialect: DialectName, transitions: readonly Transition[]): Promise<string[]> {
    const now = this.clock.now();
    const hooks = (await selectEnabledWebhooks.execute(trx, dialect, 1)).map((h) => ({ ...h, events: JSON.parse(h.events) as string[] }));
    const observe = this.config.observe?.webhookSecret ? this.config.observe : undefined;
    const rows: DeliveryRow[] = [];
    for (const { event, request } of transitions) {
      const subscribed = hooks.filter((hook) => hook.events.includes(event));
      if (subscribed.length > 0) {
        const body = JSON.stringify({ event, timestamp: toIso(now), data: deliveryData(request) });
        for (const hook of subscribed) rows.push(this.row(hook.id, 'webhook', hook.url, event, body, now));
      }
      const forwarded = observe ? observeEvent(event, request) : null;
      if (observe && forwarded) {
        const context = JSON.parse(request.context) as Record<string, unknown>;
        const correlation = {
          ...(typeof context.sessionId === 'string' && { service_session_id: context.sessionId }),
          ...(typeof context.agentId === 'string' && { service_agent_id: context.agentId }),
        };
        const observeBody = JSON.stringify({ source: 'approval_gate', event: forwarded.name, data: forwarded.data, timestamp: toIso(now), context: correlation });
        rows.push(this.row(null, 'observe', joinUrl(observe.url, '/api/events/ingest'), forwarded.name, observeBody, now));
      }
    }
    if (rows.length > 0) await deliveryInserter.insert(trx, dialect, rows);
    return rows.map((r) => r.id);
  }

  private row(webhookId: string | null, kind: string, url: string, event: string, body: string, now: number): DeliveryRow {
    return {
      id: newId(),
      webhook_id: webhookId,
      kind,
      url,
      event,
      body,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      claimed_until: null,
      last_error: null,
      response_status: null,
      created_at: now,
      delivered_at: null,
    };
  }

  /** After commit: attempt these deliveries now, in the background. */
  dispatch(ids: readonly string[]): void {
    for (const id of ids) this.track(this.attempt(id));
  }

  /** Scanner tick: every delivery due and unclaimed. */
  async deliverDue(): Promise<number> {
    const now = this.clock.now();
    const due = await this.database.db
      .selectFrom('deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .orderBy('next_attempt_at')
      .limit(500)
      .execute();
    await Promise.all(due.map((row) => this.attempt(row.id)));
    return due.length;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async attempt(id: string): Promise<void> {
    const { db } = this.database;
    const { timeoutMs, maxAttempts } = this.config.webhooks;
    const now = this.clock.now();
    const claim = await db
      .updateTable('deliveries')
      .set({ claimed_until: now + timeoutMs + CLAIM_SLACK_MS })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .executeTakeFirst();
    if (Number(claim.numUpdatedRows) !== 1) return;
    const delivery = await db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    const outcome = await this.send(delivery);
    const attempts = delivery.attempts + 1;
    const finishedAt = this.clock.now();
    const status = outcome.ok ? 'delivered' : attempts >= maxAttempts ? 'failed' : 'pending';
    // Attempt n+1 waits 2^n seconds after attempt n (2 s, 4 s, ...).
    const retryDelay = 2 ** attempts * 1000;
    await db
      .updateTable('deliveries')
      .set({
        status,
        attempts,
        claimed_until: null,
        response_status: outcome.status,
        last_error: outcome.error,
        delivered_at: outcome.ok ? finishedAt : null,
        next_attempt_at: status === 'pending' ? finishedAt + retryDelay : delivery.next_attempt_at,
      })
      .where('id', '=', id)
      .execute();
    if (status === 'failed') this.log.warn({ delivery: id, url: delivery.url, error: outcome.error }, 'webhook delivery failed permanently');
    if (status === 'pending' && !this.stopped) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.track(this.attempt(id));
      }, retryDelay);
      timer.unref();
      this.timers.add(timer);
    }
  }

  private async send(delivery: DeliveryRow): Promise<{ ok: boolean; status: number | null; error: string | null }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (delivery.kind === 'observe') {
      const secret = this.config.observe?.webhookSecret;
      if (secret) headers['x-webhook-signature'] = hmacSha256Hex(secret, delivery.body);
    } else {
      const hook = delivery.webhook_id
        ? await this.database.db.selectFrom('webhooks').select(['secret']).where('id', '=', delivery.webhook_id).executeTakeFirst()
        : undefined;
      if (!hook) return { ok: false, status: null, error: 'the webhook was deleted' };
      const timestamp = Math.floor(this.clock.now() / 1000);
      headers['x-gate-event'] = delivery.event;
      headers['x-gate-delivery'] = delivery.id;
      headers['x-gate-timestamp'] = String(timestamp);
      if (hook.secret) headers['x-gate-signature'] = signDelivery(hook.secret, timestamp, delivery.body);
    }
    try {
      const response = await fetchWithTimeout(delivery.url, { method: 'POST', headers, body: delivery.body, timeoutMs: this.config.webhooks.timeoutMs });
      await response.arrayBuffer();
      return response.ok ? { ok: true, status: response.status, error: null } : { ok: false, status: response.status, error: `HTTP ${response.status}` };
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${this.config.webhooks.timeoutMs} ms` : (error as Error).message;
      return { ok: false, status: null, error: reason };
    }
  }

  /** Stops retry timers and waits for attempts in flight (graceful shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }
}
