import { DAY_MS, jsonNumberAt, MINUTE_MS, newId, toIso, type DeliveryQueue } from '@vigil/platform';
import { usdOf } from '@vigil/pricing';
import type { FastifyBaseLogger } from 'fastify';
import { SYSTEM_AGENT_ID } from '../events/index.ts';
import { COUNTED_EVENT_TYPES } from '../alerts/index.ts';
import { aggregate, emptySums, ratio, type Sums } from '../analytics/index.ts';
import type { ObserveContext } from '../context.ts';
import { notificationQueue } from '../notifications.ts';
import { agentHealth, DEFAULT_WINDOW_DAYS, type HealthReport } from '../health/index.ts';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { GuardrailTriggerRow } from './tables.ts';
import type { ActionConfig, ActionResult, ConditionConfig, Operator, TriggerNotification } from './schemas.ts';
import { insertTrigger, lastTriggeredFor, listEnabledRules, lockRule, pauseAgent, queueDelivery, setAgentFields, type GuardrailRule } from './store.ts';
import type { Transaction } from 'kysely';
import type { CommittedBatch } from '../events/index.ts';
import { countedInWindows, latestMetricOf, maxCost, maxErrorRate, RollingWindow, SeenPositions, seedWindow, WINDOW_RESEED_MS } from './windows.ts';

/** How often the sweep re-evaluates every rule (time-based conditions, cooldowns that ended, missed batches). */
export const GUARDRAIL_SWEEP_INTERVAL_MS = 30_000;
export const GUARDRAIL_SWEEP_JOB = 'observe.guardrails';

// ---- pure condition logic ----

/** The number a rule compares its measured value with. */
export function thresholdOf(rule: Pick<GuardrailRule, 'conditionType' | 'conditionConfig'>): number {
  const config = rule.conditionConfig as ConditionConfig & Record<string, number>;
  switch (rule.conditionType) {
    case 'error_rate_threshold':
      return config.threshold;
    case 'cost_limit':
      return config.maxCostUsd;
    case 'health_score_threshold':
      return config.minScore;
    case 'custom_metric':
      return config.value;
  }
}

export function compare(value: number, operator: Operator, reference: number): boolean {
  switch (operator) {
    case 'gt':
      return value > reference;
    case 'gte':
      return value >= reference;
    case 'lt':
      return value < reference;
    case 'lte':
      return value <= reference;
    case 'eq':
      return value === reference;
  }
}

/** Error rate and cost fire above their threshold, health below its minimum, a custom metric by its operator. */
export function conditionMet(rule: Pick<GuardrailRule, 'conditionType' | 'conditionConfig'>, value: number): boolean {
  const threshold = thresholdOf(rule);
  switch (rule.conditionType) {
    case 'error_rate_threshold':
    case 'cost_limit':
      return value > threshold;
    case 'health_score_threshold':
      return value < threshold;
    case 'custom_metric':
      return compare(value, (rule.conditionConfig as ConditionConfig<'custom_metric'>).operator, threshold);
  }
}

export function describeCondition(rule: Pick<GuardrailRule, 'conditionType' | 'conditionConfig'>, value: number): string {
  const threshold = thresholdOf(rule);
  switch (rule.conditionType) {
    case 'error_rate_threshold':
      return `error rate ${round(value)}% exceeds ${threshold}% over ${(rule.conditionConfig as ConditionConfig<'error_rate_threshold'>).windowMs} ms`;
    case 'cost_limit':
      return `cost ${round(value)} USD exceeds ${threshold} USD over ${(rule.conditionConfig as ConditionConfig<'cost_limit'>).periodMs} ms`;
    case 'health_score_threshold': {
      const dimension = (rule.conditionConfig as ConditionConfig<'health_score_threshold'>).dimension;
      return `${dimension === undefined ? 'health score' : `${dimension} health score`} ${round(value)} is below ${threshold}`;
    }
    case 'custom_metric': {
      const { metricKey, operator } = rule.conditionConfig as ConditionConfig<'custom_metric'>;
      return `${metricKey} = ${value} (${operator} ${threshold})`;
    }
  }
}

const round = (value: number): number => Math.round(value * 10_000) / 10_000;

/** How far back the sweep looks for agents a rule without an agentId may apply to. */
export function sweepLookbackMs(rule: Pick<GuardrailRule, 'conditionType' | 'conditionConfig'>): number {
  switch (rule.conditionType) {
    case 'error_rate_threshold':
      return (rule.conditionConfig as ConditionConfig<'error_rate_threshold'>).windowMs;
    case 'cost_limit':
      return (rule.conditionConfig as ConditionConfig<'cost_limit'>).periodMs;
    case 'health_score_threshold':
      return DEFAULT_WINDOW_DAYS * DAY_MS;
    case 'custom_metric':
      return DAY_MS;
  }
}

/** The length of the rolling window the rule measures (error rate, cost); null for the others. */
function windowLength(rule: Pick<GuardrailRule, 'conditionType' | 'conditionConfig'>): number | null {
  switch (rule.conditionType) {
    case 'error_rate_threshold':
      return (rule.conditionConfig as ConditionConfig<'error_rate_threshold'>).windowMs;
    case 'cost_limit':
      return (rule.conditionConfig as ConditionConfig<'cost_limit'>).periodMs;
    default:
      return null;
  }
}

// ---- measuring (SQL over the event store) ----

/**
 * The latest numeric value at the metric's dot path in payload.data or metadata of the agent's
 * events of the last `lookbackMs` (an index range, never the agent's whole history). After a
 * commit the engine reads it from the committed events instead (latestMetricOf).
 */
async function latestMetric(database: ObserveDatabase, agentId: string, metricKey: string, since: number): Promise<number | null> {
  const path = metricKey.split('.');
  const inPayload = jsonNumberAt(database.dialect, 'payload', ['data', ...path]);
  const inMetadata = jsonNumberAt(database.dialect, 'metadata', path);
  const row = await database.db
    .selectFrom('events')
    .select((eb) => eb.fn.coalesce(inPayload, inMetadata).as('value'))
    .where('agent_id', '=', agentId)
    .where((eb) => eb.or([eb(inPayload, 'is not', null), eb(inMetadata, 'is not', null)]))
    .where('ts', '>=', since)
    .orderBy('ts', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.value === null || row?.value === undefined ? null : Number(row.value);
}

/**
 * The figures one evaluation run reads from SQL, each at most once per agent: rules that need the
 * same window's sums, the same health report or the same metric share one query.
 */
export class Readings {
  private readonly cache = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ctx: ObserveContext,
    readonly now: number,
  ) {}

  private once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let reading = this.cache.get(key) as Promise<T> | undefined;
    if (!reading) {
      reading = read();
      this.cache.set(key, reading);
    }
    return reading;
  }

  /** Sums of the agent's events over [now − length, now] (rollups plus edge events). */
  sums(agentId: string, length: number): Promise<Sums> {
    return this.once(`sums\u0000${agentId}\u0000${length}`, async () => {
      const [sums = emptySums()] = await aggregate(this.ctx.database, {
        from: this.now - length,
        to: this.now,
        dimensions: [],
        agentId,
        eventTypes: COUNTED_EVENT_TYPES,
      });
      return sums;
    });
  }

  health(agentId: string): Promise<HealthReport | null> {
    return this.once(`health\u0000${agentId}`, () => agentHealth(this.ctx, agentId, DEFAULT_WINDOW_DAYS, this.now));
  }

  metric(agentId: string, metricKey: string, lookbackMs: number): Promise<number | null> {
    return this.once(`metric\u0000${agentId}\u0000${metricKey}\u0000${lookbackMs}`, () =>
      latestMetric(this.ctx.database, agentId, metricKey, this.now - lookbackMs),
    );
  }
}

/** The rule's current value for the agent, or null when there is nothing to judge yet (no events, no sessions, no metric). */
export async function measure(readings: Readings, rule: GuardrailRule, agentId: string): Promise<number | null> {
  switch (rule.conditionType) {
    case 'error_rate_threshold': {
      const sums = await readings.sums(agentId, (rule.conditionConfig as ConditionConfig<'error_rate_threshold'>).windowMs);
      return sums.eventCount === 0 ? null : 100 * ratio(sums.errorCount, sums.eventCount);
    }
    case 'cost_limit':
      return usdOf((await readings.sums(agentId, (rule.conditionConfig as ConditionConfig<'cost_limit'>).periodMs)).costNanos);
    case 'health_score_threshold': {
      const report = await readings.health(agentId);
      if (report === null) return null;
      const dimension = (rule.conditionConfig as ConditionConfig<'health_score_threshold'>).dimension;
      return dimension === undefined ? report.overallScore : (report.dimensions.find((d) => d.name === dimension)?.score ?? null);
    }
    case 'custom_metric':
      return readings.metric(agentId, (rule.conditionConfig as ConditionConfig<'custom_metric'>).metricKey, sweepLookbackMs(rule));
  }
}

// ---- firing ----

export function notificationOf(trigger: GuardrailTriggerRow): TriggerNotification {
  return {
    triggerId: trigger.id,
    ruleId: trigger.rule_id,
    ruleName: trigger.rule_name,
    conditionType: trigger.condition_type as TriggerNotification['conditionType'],
    currentValue: trigger.current_value,
    threshold: trigger.threshold,
    agentId: trigger.agent_id,
    timestamp: toIso(trigger.triggered_at),
    dryRun: trigger.dry_run === 1,
    actionType: 'notify_webhook',
  };
}

/** Runs the rule's action on the agent record in the caller's transaction (not for notify_webhook, which is queued). */
async function applyAgentAction(trx: Transaction<ObserveSchema>, rule: GuardrailRule, agentId: string, reason: string, now: number): Promise<ActionResult> {
  switch (rule.actionType) {
    case 'pause_agent': {
      const outcome = await pauseAgent(trx, agentId, (rule.actionConfig as ActionConfig<'pause_agent'>).reason ?? reason, now);
      const detail = { paused: 'agent paused', already_paused: 'agent was already paused', unknown: 'agent not found; nothing paused' }[outcome];
      return { status: 'applied', detail };
    }
    case 'downgrade_model': {
      const target = (rule.actionConfig as ActionConfig<'downgrade_model'>).targetModel;
      const done = await setAgentFields(trx, agentId, { model_override: target });
      return { status: 'applied', detail: done ? `modelOverride set to ${target}` : 'agent not found; no override set' };
    }
    case 'approval_policy': {
      const policyId = (rule.actionConfig as ActionConfig<'approval_policy'>).policyId;
      const done = await setAgentFields(trx, agentId, { approval_policy_id: policyId });
      return { status: 'applied', detail: done ? `approvalPolicyId set to ${policyId}` : 'agent not found; no policy set' };
    }
    case 'notify_webhook':
      throw new Error('notify_webhook is queued, not applied');
  }
}

const WOULD: Record<Exclude<GuardrailRule['actionType'], 'notify_webhook'>, string> = {
  pause_agent: 'pause the agent',
  downgrade_model: 'set the model override',
  approval_policy: 'set the approval policy',
};

export interface Fired {
  trigger: GuardrailTriggerRow;
  deliveryId: string | null;
}

/**
 * Records a trigger and runs its action, in one transaction under the rule's row lock. Nothing
 * happens when the rule changed, was disabled or deleted since it was measured, or already fired
 * for this agent within its cooldown (on any instance: the lock serialises them).
 */
export async function fire(ctx: ObserveContext, measured: GuardrailRule, agentId: string, value: number, now: number): Promise<Fired | null> {
  const { database } = ctx;
  return database.db.transaction().execute(async (trx) => {
    const rule = await lockRule(trx, database.dialect, measured.id);
    if (!rule || !rule.enabled || rule.updatedAt !== measured.updatedAt) return null;
    const last = await lastTriggeredFor(trx, rule.id, agentId);
    if (last !== null && now - last < rule.cooldownMinutes * MINUTE_MS) return null;

    const trigger: GuardrailTriggerRow = {
      id: newId(),
      rule_id: rule.id,
      rule_name: rule.name,
      agent_id: agentId,
      triggered_at: now,
      condition_type: rule.conditionType,
      current_value: value,
      threshold: thresholdOf(rule),
      action_type: rule.actionType,
      dry_run: rule.dryRun ? 1 : 0,
      action_result: '',
    };
    let deliveryId: string | null = null;
    let result: ActionResult;
    if (rule.actionType === 'notify_webhook') {
      const url = (rule.actionConfig as ActionConfig<'notify_webhook'>).url;
      deliveryId = await queueDelivery(trx, trigger.id, url, JSON.stringify(notificationOf(trigger)), now);
      result = rule.dryRun
        ? { status: 'dry_run', detail: `dry run: notification (dryRun true) queued to ${url}` }
        : { status: 'queued', detail: `notification queued to ${url}` };
    } else if (rule.dryRun) {
      result = { status: 'dry_run', detail: `dry run: would ${WOULD[rule.actionType]}` };
    } else {
      result = await applyAgentAction(trx, rule, agentId, `Guardrail "${rule.name}": ${describeCondition(rule, value)}`, now);
    }
    trigger.action_result = JSON.stringify(result);
    await insertTrigger(trx, trigger);
    return { trigger, deliveryId };
  });
}

// ---- the engine: after each ingest commit, and the sweep ----

export type CommittedEvent = CommittedBatch['events'][number];

/** Adds the agent's counted events of a commit the window's seed did not read (a later log position). */
function addCommitted(window: RollingWindow, committed: CommittedBatch, agentId: string): void {
  if (committed.logPositions !== null && committed.logPositions.last <= window.seededThrough) return;
  for (const { row } of committed.events) if (row.agent_id === agentId && countedInWindows(row)) window.addEvent(row);
}

/**
 * Evaluates guardrails off the request path. After an ingest commit the batch's agents are queued
 * and drained in the background (batches arriving meanwhile coalesce); the periodic sweep
 * evaluates every enabled rule and sends due notifications, so a crash between commit and
 * evaluation is made good within one sweep interval.
 */
export class GuardrailEngine {
  /** Agents waiting for evaluation, with their events committed since. */
  private readonly pending = new Map<string, CommittedEvent[]>();
  private draining: Promise<void> | null = null;
  private readonly deliveries: DeliveryQueue<ObserveSchema, 'guardrail_deliveries'>;
  /** Per agent, its rolling windows by length (windows.ts); a window being seeded holds the commits it must add once seeded. */
  private readonly windows = new Map<string, Map<number, RollingWindow | CommittedBatch[]>>();
  private readonly seen = new SeenPositions();

  constructor(
    private readonly ctx: ObserveContext,
    private readonly log: FastifyBaseLogger,
    private readonly evaluateAfterCommit: boolean,
  ) {
    this.deliveries = notificationQueue(ctx, log, 'guardrail_deliveries', () => 'guardrail.triggered');
  }

  /** After an ingest commit: the batch's events go into the agents' windows and the agents are queued for a look (the system agent's bookkeeping needs none). */
  eventsCommitted(committed: CommittedBatch): void {
    if (committed.logPositions !== null) this.seen.add(committed.logPositions);
    for (const event of committed.events) {
      const agentId = event.row.agent_id;
      if (agentId === SYSTEM_AGENT_ID) continue;
      const events = this.pending.get(agentId);
      if (events) events.push(event);
      else this.pending.set(agentId, [event]);
    }
    for (const agentId of new Set(committed.events.map((event) => event.row.agent_id))) {
      for (const window of this.windows.get(agentId)?.values() ?? []) {
        if (Array.isArray(window)) window.push(committed);
        else addCommitted(window, committed, agentId);
      }
    }
    if (this.evaluateAfterCommit && this.pending.size > 0) void this.drain();
  }

  /** Evaluates the queued agents until none are left; concurrent calls share one run. */
  drain(): Promise<void> {
    this.draining ??= (async () => {
      while (this.pending.size > 0) {
        const committed = new Map(this.pending);
        this.pending.clear();
        await this.evaluateCommitted(committed, this.ctx.clock.now()).catch((error: unknown) =>
          this.log.error({ err: error }, 'guardrail evaluation failed; the sweep retries'),
        );
      }
    })().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  /**
   * Every enabled rule that applies to these agents, for each of them, after their events
   * committed. Error rates and costs are bounded from the in-memory windows first (SQL only when
   * a breach is possible), custom metrics are read from the committed events themselves, health
   * scores from SQL. Returns the triggers recorded.
   */
  async evaluateCommitted(committed: ReadonlyMap<string, readonly CommittedEvent[]>, now: number): Promise<Fired[]> {
    const agentIds = [...committed.keys()];
    if (agentIds.length === 0) return [];
    const rules = await listEnabledRules(this.ctx.database, agentIds);
    const readings = new Readings(this.ctx, now);
    const latest = this.seen.latest;
    const fired: Fired[] = [];
    for (const rule of rules) {
      for (const agentId of rule.agentId === null ? agentIds : [rule.agentId]) {
        const events = committed.get(agentId);
        if (!events) continue;
        const trigger = await this.evaluate(rule, agentId, readings, async () => {
          const length = windowLength(rule);
          if (length !== null) return (await this.mightBreach(rule, agentId, length, latest, now)) ? measure(readings, rule, agentId) : null;
          if (rule.conditionType === 'custom_metric') return latestMetricOf(events, (rule.conditionConfig as ConditionConfig<'custom_metric'>).metricKey);
          return measure(readings, rule, agentId);
        });
        if (trigger) fired.push(trigger);
      }
    }
    return fired;
  }

  /**
   * Whether the agent's window allows the rule's breach; the window is seeded when missing or when
   * another instance may have committed between its seed and `through` (this instance's latest commit).
   */
  private async mightBreach(rule: GuardrailRule, agentId: string, length: number, through: number, now: number): Promise<boolean> {
    let window = this.windows.get(agentId)?.get(length);
    if (!(window instanceof RollingWindow) || !this.seen.covers(window.seededThrough, through)) window = await this.seed(agentId, length, now);
    const bounds = window.bounds(now);
    if (rule.conditionType === 'error_rate_threshold') {
      const rate = maxErrorRate(bounds);
      return rate !== null && conditionMet(rule, rate);
    }
    return conditionMet(rule, maxCost(bounds));
  }

  private async seed(agentId: string, length: number, now: number): Promise<RollingWindow> {
    let windows = this.windows.get(agentId);
    if (!windows) this.windows.set(agentId, (windows = new Map()));
    const arriving: CommittedBatch[] = [];
    windows.set(length, arriving);
    try {
      const window = await seedWindow(this.ctx.database, agentId, length, now);
      for (const batch of arriving) addCommitted(window, batch, agentId);
      windows.set(length, window);
      return window;
    } catch (error) {
      windows.delete(length);
      throw error;
    }
  }

  /** One run of the sweep job: every enabled rule for its agent, or for every agent (not the system agent) seen within its lookback. */
  async sweep(now: number): Promise<Fired[]> {
    const fired: Fired[] = [];
    this.retireWindows(now);
    const readings = new Readings(this.ctx, now);
    for (const rule of await listEnabledRules(this.ctx.database)) {
      const agentIds = rule.agentId !== null ? [rule.agentId] : await this.recentAgents(now - sweepLookbackMs(rule));
      for (const agentId of agentIds) {
        const trigger = await this.evaluate(rule, agentId, readings);
        if (trigger) fired.push(trigger);
      }
    }
    await this.deliveries.deliverDue();
    return fired;
  }

  /** Drops the windows that hold no events any more (idle agents) or were seeded WINDOW_RESEED_MS ago (seeded again when next needed). */
  private retireWindows(now: number): void {
    for (const [agentId, windows] of this.windows) {
      for (const [length, window] of windows) {
        if (!(window instanceof RollingWindow)) continue;
        window.bounds(now);
        if (window.bucketCount === 0 || now - window.seededAt >= WINDOW_RESEED_MS) windows.delete(length);
      }
      if (windows.size === 0) this.windows.delete(agentId);
    }
  }

  /** Waits for the after-commit evaluation and the notifications it started. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
    await this.deliveries.settle();
  }

  async stop(): Promise<void> {
    await this.draining;
    await this.deliveries.stop();
  }

  private async recentAgents(since: number): Promise<string[]> {
    const rows = await this.ctx.database.db
      .selectFrom('agents')
      .select('id')
      .where('last_seen_at', '>=', since)
      .where('id', '<>', SYSTEM_AGENT_ID)
      .orderBy('id')
      .execute();
    return rows.map((row) => row.id);
  }

  private async evaluate(rule: GuardrailRule, agentId: string, readings: Readings, valueOf = () => measure(readings, rule, agentId)): Promise<Fired | null> {
    try {
      const value = await valueOf();
      if (value === null || !conditionMet(rule, value)) return null;
      const fired = await fire(this.ctx, rule, agentId, value, readings.now);
      if (fired?.deliveryId) this.deliveries.dispatch([fired.deliveryId]);
      if (fired) this.log.info({ guardrailRuleId: rule.id, agentId, value, actionType: rule.actionType, dryRun: rule.dryRun }, 'guardrail triggered');
      return fired;
    } catch (error) {
      // One failing rule never stops the others.
      this.log.error({ err: error, guardrailRuleId: rule.id, agentId }, 'guardrail rule evaluation failed');
      return null;
    }
  }
}
