import { MINUTE_MS, newId, recordChange, toIso, type ChangeActor } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import { usdOf } from '@vigil/pricing';
import { sql } from 'kysely';
import type { ObserveContext } from '../context.ts';
import { notificationQueue } from '../notifications.ts';
import { aggregate, emptySums, mean, ratio } from '../analytics/index.ts';
import { SYSTEM_AGENT_ID, SERVER_WRITER, INGEST_EVENT_TYPES, SERVER_EVENT_TYPES, sumNanosSql, type IncomingEvent } from '../events/index.ts';
import type { ObserveDatabase } from '../schema.ts';
import type { AlertHistoryRow } from './tables.ts';
import type { AlertCondition, AlertScope } from './schemas.ts';
import {
  closeEntry,
  deleteRule,
  entriesMissingEvents,
  findOpenEntry,
  insertOpenEntry,
  listEnabledRules,
  lockRule,
  markNotifiedWhenComplete,
  queueDeliveries,
  setEventId,
  toRuleOut,
  type AlertRule,
} from './store.ts';

/**
 * The session of a rule's own events, under the system agent: bookkeeping that counts toward no
 * agent's sessions, health or completion (the rule's scope is in its history entry and
 * notifications). Alert events never feed any rule.
 */
export const ALERT_SESSION_PREFIX = 'alert:';
export const ALERT_EVENT_TYPES = ['alert_triggered', 'alert_resolved'] as const;
export const alertSessionId = (ruleId: string): string => `${ALERT_SESSION_PREFIX}${ruleId}`;

export type ResolvedBy = 'condition_cleared' | 'rule_deleted';

// ---- pure decision logic ----

/** A rule fires when its value is strictly greater than its threshold (for no_events_for: minutes of silence). */
export function exceeds(value: number, threshold: number): boolean {
  return value > threshold;
}

export type Decision = 'fire' | 'resolve' | 'none';

/** Fire when exceeded and nothing is open; resolve an open entry once the condition has cleared. */
export function decide(value: number, threshold: number, hasOpenEntry: boolean): Decision {
  const over = exceeds(value, threshold);
  if (over && !hasOpenEntry) return 'fire';
  if (!over && hasOpenEntry) return 'resolve';
  return 'none';
}

/** no_events_for: minutes since the newest event in scope, or since the rule was created when there is none. */
export function minutesOfSilence(now: number, newestEventAt: number | null, ruleCreatedAt: number): number {
  return (now - (newestEventAt ?? ruleCreatedAt)) / MINUTE_MS;
}

export function alertMessage(rule: Pick<AlertRule, 'name' | 'condition' | 'windowMinutes'>, value: number, threshold: number): string {
  const window = `over the last ${rule.windowMinutes} minute${rule.windowMinutes === 1 ? '' : 's'}`;
  const what: Record<AlertCondition, string> = {
    error_rate_exceeds: `error rate ${value} exceeds ${threshold} ${window}`,
    cost_exceeds: `cost ${value} USD exceeds ${threshold} USD ${window}`,
    latency_exceeds: `average tool latency ${value} ms exceeds ${threshold} ms ${window}`,
    event_count_exceeds: `${value} events exceed ${threshold} ${window}`,
    no_events_for: `no events for ${value} minutes (threshold ${threshold} minutes)`,
  };
  return `${rule.name}: ${what[rule.condition]}`;
}

/** What is POSTed to each notifyChannels URL when a rule fires (resolving adds `resolvedAt`). */
export interface TriggeredNotification {
  alertRuleId: string;
  alertName: string;
  condition: AlertCondition;
  currentValue: number;
  threshold: number;
  message: string;
  windowMinutes: number;
  scope: AlertScope;
  triggeredAt: string;
}

export function triggeredNotification(rule: AlertRule, value: number, now: number): TriggeredNotification {
  return {
    alertRuleId: rule.id,
    alertName: rule.name,
    condition: rule.condition,
    currentValue: value,
    threshold: rule.threshold,
    message: alertMessage(rule, value, rule.threshold),
    windowMinutes: rule.windowMinutes,
    scope: rule.scope,
    triggeredAt: toIso(now),
  };
}

// ---- measuring (SQL over the event store) ----

/** Events that count for a rule: in scope, up to `now`, never the alerts' own events or sessions. */
function eventsInScope(database: ObserveDatabase, scope: AlertScope, from: number | null, now: number) {
  let query = database.db
    .selectFrom('events')
    .where('ts', '<=', now)
    .where('event_type', 'not in', [...ALERT_EVENT_TYPES]);
  if (from !== null) query = query.where('ts', '>=', from);
  if (scope.agentId !== undefined) query = query.where('agent_id', '=', scope.agentId);
  const tags = [...new Set(scope.tags ?? [])];
  if (tags.length > 0) {
    query = query.where('session_id', 'in', (eb) =>
      eb
        .selectFrom('session_tags')
        .select('session_id')
        .where('tag', 'in', tags)
        .groupBy('session_id')
        .having((h) => h.fn.countAll(), '=', tags.length),
    );
  }
  return query;
}

/** Every event type a rule measures: all but the alerts' own events. */
export const COUNTED_EVENT_TYPES = [...INGEST_EVENT_TYPES, ...SERVER_EVENT_TYPES].filter((t) => !(ALERT_EVENT_TYPES as readonly string[]).includes(t));

/**
 * Without a tag scope the window's figures come from the analytics rollups (exact, and no scan of
 * the raw events however long the window); a tag scope needs the events of the tagged sessions.
 */
async function measureFromRollups(database: ObserveDatabase, rule: AlertRule, from: number, now: number): Promise<number> {
  const [sums = emptySums()] = await aggregate(database, { from, to: now, dimensions: [], agentId: rule.scope.agentId, eventTypes: COUNTED_EVENT_TYPES });
  switch (rule.condition) {
    case 'error_rate_exceeds':
      return ratio(sums.errorCount, sums.eventCount);
    case 'cost_exceeds':
      return usdOf(sums.costNanos);
    case 'latency_exceeds':
      return mean(sums.durationSum, sums.durationCount);
    default:
      return sums.eventCount;
  }
}

/** The rule's current value, computed in SQL over [now − windowMinutes, now]. */
export async function measure(database: ObserveDatabase, rule: AlertRule, now: number): Promise<number> {
  if (rule.condition === 'no_events_for') {
    const row = await eventsInScope(database, rule.scope, null, now)
      .select(sql<number | null>`max(ts)`.as('newest'))
      .executeTakeFirst();
    const newest = row?.newest;
    return minutesOfSilence(now, newest === null || newest === undefined ? null : Number(newest), rule.createdAt);
  }
  const from = now - rule.windowMinutes * MINUTE_MS;
  if ((rule.scope.tags ?? []).length === 0) return measureFromRollups(database, rule, from, now);
  const scoped = eventsInScope(database, rule.scope, from, now);
  let value;
  switch (rule.condition) {
    case 'error_rate_exceeds':
      value = scoped.select(sql<number>`case when count(*) = 0 then 0 else cast(sum(is_error) as double precision) / count(*) end`.as('value'));
      break;
    case 'cost_exceeds':
      return usdOf(Number((await scoped.select(sumNanosSql('cost_usd').as('nanos')).executeTakeFirst())?.nanos ?? 0));
    case 'latency_exceeds':
      value = scoped.where('event_type', 'in', ['tool_response', 'tool_error']).select(sql<number>`coalesce(avg(duration_ms), 0)`.as('value'));
      break;
    case 'event_count_exceeds':
      value = scoped.select(sql<number>`count(*)`.as('value'));
      break;
  }
  const row = await value.executeTakeFirst();
  return Number(row?.value ?? 0);
}

// ---- state changes ----

type AlertEvent = 'triggered' | 'resolved';

function eventFor(entry: AlertHistoryRow, kind: AlertEvent): IncomingEvent {
  const summary = JSON.parse(entry.summary) as TriggeredNotification;
  const base = { sessionId: alertSessionId(entry.rule_id), agentId: entry.agent_id };
  return kind === 'triggered'
    ? {
        ...base,
        eventType: 'alert_triggered',
        severity: 'warn',
        timestamp: entry.triggered_at,
        payload: {
          alertRuleId: summary.alertRuleId,
          alertName: summary.alertName,
          condition: summary.condition,
          currentValue: summary.currentValue,
          threshold: summary.threshold,
          message: summary.message,
        },
      }
    : {
        ...base,
        eventType: 'alert_resolved',
        severity: 'info',
        timestamp: entry.resolved_at!,
        payload: { alertRuleId: summary.alertRuleId, alertName: summary.alertName, resolvedBy: entry.resolved_by ?? 'condition_cleared' },
      };
}

/** After commit: the entry's event goes through the one write path; the id marks it done. */
async function appendAlertEvent(ctx: ObserveContext, entry: AlertHistoryRow, kind: AlertEvent): Promise<void> {
  const [appended] = await ctx.events.append([eventFor(entry, kind)], ctx.clock.now(), { writtenBy: SERVER_WRITER });
  await setEventId(ctx.database, entry.id, kind, appended!.id);
  if (kind === 'triggered') entry.triggered_event_id = appended!.id;
  else entry.resolved_event_id = appended!.id;
}

/**
 * Opens an entry and queues one delivery per channel, in one transaction under the rule's row
 * lock. Nothing happens when the rule changed, was disabled or deleted since it was measured, or
 * already has an open entry (another instance, or the partial unique index, got there first).
 */
async function fire(ctx: ObserveContext, measured: AlertRule, value: number, now: number): Promise<AlertHistoryRow | null> {
  const { database } = ctx;
  const entry = await database.db.transaction().execute(async (trx) => {
    const rule = await lockRule(trx, database.dialect, measured.id);
    if (!rule || !rule.enabled || rule.updatedAt !== measured.updatedAt) return null;
    if (await findOpenEntry(trx, rule.id)) return null;
    // A measurement older than the rule's last resolution (a slow tick overlapping a newer one on
    // another instance) must not open the alert again.
    const last = await trx
      .selectFrom('alert_history')
      .select((eb) => eb.fn.max('resolved_at').as('resolvedAt'))
      .where('rule_id', '=', rule.id)
      .executeTakeFirst();
    if (last?.resolvedAt !== null && last?.resolvedAt !== undefined && Number(last.resolvedAt) > now) return null;
    const summary = triggeredNotification(rule, value, now);
    const row: AlertHistoryRow = {
      id: newId(),
      rule_id: rule.id,
      triggered_at: now,
      resolved_at: null,
      resolved_by: null,
      current_value: value,
      threshold: rule.threshold,
      notified: 0,
      agent_id: SYSTEM_AGENT_ID,
      summary: JSON.stringify(summary),
      triggered_event_id: null,
      resolved_event_id: null,
    };
    if (!(await insertOpenEntry(trx, row))) return null;
    await queueDeliveries(trx, row.id, 'triggered', rule.notifyChannels, row.summary, now);
    return row;
  });
  if (entry) await appendAlertEvent(ctx, entry, 'triggered');
  return entry;
}

/** In the caller's transaction: closes the entry and queues the resolved notification to `channels`. */
async function closeAndQueue(
  trx: Parameters<typeof closeEntry>[0],
  entry: AlertHistoryRow,
  channels: readonly string[],
  now: number,
  resolvedBy: ResolvedBy,
): Promise<boolean> {
  if (!(await closeEntry(trx, entry.id, now, resolvedBy))) return false;
  entry.resolved_at = now;
  entry.resolved_by = resolvedBy;
  const body = JSON.stringify({ ...(JSON.parse(entry.summary) as TriggeredNotification), resolvedAt: toIso(now) });
  await queueDeliveries(trx, entry.id, 'resolved', channels, body, now);
  return true;
}

async function resolve(ctx: ObserveContext, measured: AlertRule, entry: AlertHistoryRow, now: number): Promise<boolean> {
  const { database } = ctx;
  // The entry was opened by a tick that measured after this one (a slow tick overlapping a newer
  // one on another instance): this measurement predates it and cannot clear it.
  if (Number(entry.triggered_at) > now) return false;
  const closed = await database.db.transaction().execute(async (trx) => {
    const rule = await lockRule(trx, database.dialect, measured.id);
    if (!rule || !rule.enabled || rule.updatedAt !== measured.updatedAt) return false;
    return closeAndQueue(trx, entry, rule.notifyChannels, now, 'condition_cleared');
  });
  if (closed) await appendAlertEvent(ctx, entry, 'resolved');
  return closed;
}

/**
 * DELETE of a rule: the rule goes, its history stays. An entry still open is closed at deletion
 * time (`resolvedBy: rule_deleted`), gets its alert_resolved event, and its resolved notification
 * is queued for the next tick. Returns false for an unknown rule.
 */
export async function deleteAlertRule(ctx: ObserveContext, id: string, actor: ChangeActor, log: FastifyBaseLogger): Promise<boolean> {
  const { database } = ctx;
  const now = ctx.clock.now();
  const outcome = await database.db.transaction().execute(async (trx) => {
    const rule = await lockRule(trx, database.dialect, id);
    if (!rule) return null;
    await deleteRule(trx, id);
    await recordChange(trx, { resource: 'alert_rule', resourceId: id, action: 'deleted', actor, before: toRuleOut(rule), after: null }, now);
    const open = await findOpenEntry(trx, id);
    const closed = open !== undefined && (await closeAndQueue(trx, open, rule.notifyChannels, now, 'rule_deleted'));
    return { closed: closed ? open : null };
  });
  if (!outcome) return false;
  if (outcome.closed) {
    // A failure here is repaired by the next tick (the entry has no resolved event id yet).
    await appendAlertEvent(ctx, outcome.closed, 'resolved').catch((error: unknown) =>
      log.error({ err: error, alertRuleId: id }, 'alert_resolved event not appended; the next alert tick retries'),
    );
  }
  return true;
}

// ---- notifications ----

/**
 * Every due notification (claims, 5 s timeout, 2^n s retries, 3 attempts), awaited by the tick;
 * retries are picked up by later ticks.
 */
export async function deliverDue(ctx: ObserveContext, log: FastifyBaseLogger): Promise<number> {
  const queue = notificationQueue(
    ctx,
    log,
    'alert_deliveries',
    (row) => `alert.${row.kind}`,
    async (row, status) => {
      if (status === 'delivered' && row.kind === 'triggered') await markNotifiedWhenComplete(ctx.database, row.history_id);
    },
  );
  return queue.deliverDue();
}

// ---- the tick ----

/** Evaluates every enabled rule once; returns how many fired and resolved. */
export async function evaluateRules(ctx: ObserveContext, now: number, log: FastifyBaseLogger): Promise<{ fired: number; resolved: number }> {
  const counts = { fired: 0, resolved: 0 };
  for (const rule of await listEnabledRules(ctx.database)) {
    try {
      const value = await measure(ctx.database, rule, now);
      const open = await findOpenEntry(ctx.database.db, rule.id);
      const decision = decide(value, rule.threshold, open !== undefined);
      if (decision === 'fire' && (await fire(ctx, rule, value, now))) counts.fired += 1;
      if (decision === 'resolve' && (await resolve(ctx, rule, open!, now))) counts.resolved += 1;
    } catch (error) {
      // One failing rule never stops the others.
      log.error({ err: error, alertRuleId: rule.id }, 'alert rule evaluation failed');
    }
  }
  return counts;
}

/** Appends the events of entries changed in an earlier tick whose append did not happen (crash, database failure). */
async function repairMissingEvents(ctx: ObserveContext, now: number): Promise<void> {
  for (const entry of await entriesMissingEvents(ctx.database, now)) {
    if (entry.triggered_event_id === null) await appendAlertEvent(ctx, entry, 'triggered');
    if (entry.resolved_at !== null && entry.resolved_event_id === null) await appendAlertEvent(ctx, entry, 'resolved');
  }
}

/**
 * One run of the `observe.alerts` job: repair, evaluate, then send every due notification (the
 * ones just queued and retries). Runs in the background job, never in an HTTP request.
 */
export async function runAlertTick(ctx: ObserveContext, now: number, log: FastifyBaseLogger): Promise<void> {
  await repairMissingEvents(ctx, now).catch((error: unknown) => log.error({ err: error }, 'alert event repair failed'));
  const { fired, resolved } = await evaluateRules(ctx, now, log);
  if (fired + resolved > 0) log.info({ fired, resolved }, 'alert rules changed state');
  await deliverDue(ctx, log);
}
