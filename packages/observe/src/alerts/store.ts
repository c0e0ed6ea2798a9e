import { forUpdate, newDelivery, newId, recordChange, toIso, type ChangeActor, type DialectName } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { AlertDeliveryRow, AlertHistoryRow, AlertRuleRow } from './tables.ts';
import type { AlertCondition, AlertRuleOut, AlertScope, HistoryEntryOut, HistoryQuery, RuleDefinition } from './schemas.ts';

/** A stored rule, decoded. */
export interface AlertRule extends RuleDefinition {
  id: string;
  condition: AlertCondition;
  createdAt: number;
  updatedAt: number;
}

type Executor = Kysely<ObserveSchema>;

export function decodeRule(row: AlertRuleRow): AlertRule {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    enabled: row.enabled === 1,
    condition: row.condition as AlertCondition,
    threshold: row.threshold,
    windowMinutes: row.window_minutes,
    scope: JSON.parse(row.scope) as AlertScope,
    notifyChannels: JSON.parse(row.notify_channels) as string[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toRuleOut(rule: AlertRule): AlertRuleOut {
  return {
    id: rule.id,
    name: rule.name,
    description: rule.description,
    enabled: rule.enabled,
    condition: rule.condition,
    threshold: rule.threshold,
    windowMinutes: rule.windowMinutes,
    scope: rule.scope,
    notifyChannels: rule.notifyChannels,
    createdAt: toIso(rule.createdAt),
    updatedAt: toIso(rule.updatedAt),
  };
}

function definitionColumns(definition: RuleDefinition) {
  return {
    name: definition.name,
    description: definition.description,
    enabled: definition.enabled ? 1 : 0,
    condition: definition.condition,
    threshold: definition.threshold,
    window_minutes: definition.windowMinutes,
    scope: JSON.stringify(definition.scope),
    notify_channels: JSON.stringify(definition.notifyChannels),
  };
}

export async function insertRule(database: ObserveDatabase, definition: RuleDefinition, actor: ChangeActor, now: number): Promise<AlertRule> {
  const row: AlertRuleRow = { id: newId(), ...definitionColumns(definition), created_at: now, updated_at: now };
  const rule = decodeRule(row);
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('alert_rules').values(row).execute();
    await recordChange(trx, { resource: 'alert_rule', resourceId: row.id, action: 'created', actor, before: null, after: toRuleOut(rule) }, now);
  });
  return rule;
}

/** Newest first (ids are time-ordered, so ties on createdAt are stable). */
export async function listRules(database: ObserveDatabase): Promise<AlertRule[]> {
  const rows = await database.db.selectFrom('alert_rules').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(decodeRule);
}

export async function listEnabledRules(database: ObserveDatabase): Promise<AlertRule[]> {
  const rows = await database.db.selectFrom('alert_rules').selectAll().where('enabled', '=', 1).orderBy('id').execute();
  return rows.map(decodeRule);
}

export async function findRule(database: ObserveDatabase, id: string): Promise<AlertRule | undefined> {
  const row = await database.db.selectFrom('alert_rules').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decodeRule(row);
}

/** The rule, row-locked for the rest of the transaction (PostgreSQL; SQLite holds the write lock). */
export async function lockRule(trx: Transaction<ObserveSchema>, dialect: DialectName, id: string): Promise<AlertRule | undefined> {
  const row = await forUpdate(trx.selectFrom('alert_rules').selectAll().where('id', '=', id), dialect).executeTakeFirst();
  return row && decodeRule(row);
}

/** Stores a rule's new definition (the caller holds its row lock: lockRule). */
export async function writeRule(trx: Transaction<ObserveSchema>, id: string, definition: RuleDefinition, now: number): Promise<void> {
  await trx
    .updateTable('alert_rules')
    .set({ ...definitionColumns(definition), updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function deleteRule(trx: Transaction<ObserveSchema>, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('alert_rules').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

// ---- history ----

export function toHistoryOut(row: AlertHistoryRow): HistoryEntryOut {
  const entry: HistoryEntryOut = {
    id: row.id,
    ruleId: row.rule_id,
    triggeredAt: toIso(row.triggered_at),
    currentValue: row.current_value,
    threshold: row.threshold,
    notified: row.notified === 1,
  };
  if (row.resolved_at !== null) entry.resolvedAt = toIso(row.resolved_at);
  return entry;
}

/** Newest first; `total` counts every matching entry. */
export async function listHistory(database: ObserveDatabase, query: HistoryQuery): Promise<{ rows: AlertHistoryRow[]; total: number }> {
  let filtered = database.db.selectFrom('alert_history');
  if (query.ruleId !== undefined) filtered = filtered.where('rule_id', '=', query.ruleId);
  if (query.from !== undefined) filtered = filtered.where('triggered_at', '>=', query.from);
  if (query.to !== undefined) filtered = filtered.where('triggered_at', '<=', query.to);
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('triggered_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function findOpenEntry(executor: Executor, ruleId: string): Promise<AlertHistoryRow | undefined> {
  return executor.selectFrom('alert_history').selectAll().where('rule_id', '=', ruleId).where('resolved_at', 'is', null).executeTakeFirst();
}

/**
 * Opens an entry for the rule. The partial unique index `alert_history_open` makes this a no-op
 * (returns false) when the rule already has an open entry, whoever inserted it.
 */
export async function insertOpenEntry(trx: Transaction<ObserveSchema>, row: AlertHistoryRow): Promise<boolean> {
  const inserted = await trx
    .insertInto('alert_history')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  return inserted.length === 1;
}

/** Closes the entry if it is still open; false when someone else closed it first. */
export async function closeEntry(trx: Transaction<ObserveSchema>, id: string, now: number, resolvedBy: string): Promise<boolean> {
  const result = await trx
    .updateTable('alert_history')
    .set({ resolved_at: now, resolved_by: resolvedBy })
    .where('id', '=', id)
    .where('resolved_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function setEventId(database: ObserveDatabase, id: string, kind: 'triggered' | 'resolved', eventId: string): Promise<void> {
  await database.db
    .updateTable('alert_history')
    .set(kind === 'triggered' ? { triggered_event_id: eventId } : { resolved_event_id: eventId })
    .where('id', '=', id)
    .execute();
}

/** Entries whose alert_triggered / alert_resolved event was not appended (a crash between commit and append). */
export async function entriesMissingEvents(database: ObserveDatabase, before: number): Promise<AlertHistoryRow[]> {
  return database.db
    .selectFrom('alert_history')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([eb('triggered_event_id', 'is', null), eb('triggered_at', '<', before)]),
        eb.and([eb('resolved_at', 'is not', null), eb('resolved_event_id', 'is', null), eb('resolved_at', '<', before)]),
      ]),
    )
    .orderBy('triggered_at')
    .orderBy('id')
    .limit(500)
    .execute();
}

// ---- deliveries (the durable notify queue) ----

export async function queueDeliveries(
  trx: Transaction<ObserveSchema>,
  historyId: string,
  kind: AlertDeliveryRow['kind'],
  urls: readonly string[],
  body: string,
  now: number,
): Promise<void> {
  if (urls.length === 0) return;
  await trx
    .insertInto('alert_deliveries')
    .values(urls.map((url) => ({ ...newDelivery(url, body, now), history_id: historyId, kind })))
    .execute();
}

/** `notified` becomes true once every channel of the entry answered 2xx to its triggered notification. */
export async function markNotifiedWhenComplete(database: ObserveDatabase, historyId: string): Promise<void> {
  await database.db
    .updateTable('alert_history')
    .set({ notified: 1 })
    .where('id', '=', historyId)
    .where('notified', '=', 0)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('alert_deliveries')
            .select(sql.lit(1).as('one'))
            .whereRef('alert_deliveries.history_id', '=', 'alert_history.id')
            .where('alert_deliveries.kind', '=', 'triggered')
            .where('alert_deliveries.status', '<>', 'delivered'),
        ),
      ),
    )
    .execute();
}
