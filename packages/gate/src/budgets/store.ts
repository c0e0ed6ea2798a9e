import {
  forUpdate,
  governedState,
  newId,
  recordChange,
  recordUpdate,
  SYSTEM_CHANGE_ACTOR,
  toIso,
  utcWindowStart,
  type ChangeActor,
  type Snapshot,
} from '@vigil/platform';
import { sql, type Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { BudgetFigureRow, BudgetRow } from './tables.ts';

/** The resource name the change log records budgets (and their breaches) under. */
export const BUDGET_CHANGES = 'budget';

export const BUDGET_SCOPES = ['agent', 'session', 'tag', 'tenant'] as const;
export const BUDGET_WINDOWS = ['session', 'hour', 'day', 'month'] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];
export type BudgetWindow = (typeof BUDGET_WINDOWS)[number];
export type BudgetLevel = 'ok' | 'soft' | 'hard';

/** The actor of breaches in the change log. */
export const BUDGET_ACTOR: ChangeActor = { ...SYSTEM_CHANGE_ACTOR, actor: 'system:budgets' };

const BUDGET_STATE_COLUMNS = ['id', 'name', 'scope', 'scope_value', 'window', 'soft_usd', 'hard_usd', 'pause_on_hard', 'enabled', 'created_at'] as const;

export function budgetState(row: BudgetRow): Snapshot {
  return governedState(row, BUDGET_STATE_COLUMNS);
}

/** The start of the UTC window holding `now` (0 for `session`: a session's whole life). */
export function windowStart(window: string, now: number): number {
  return window === 'hour' || window === 'day' || window === 'month' ? utcWindowStart(window, now) : 0;
}

export function levelOf(budget: Pick<BudgetRow, 'soft_usd' | 'hard_usd'>, spendUsd: number): BudgetLevel {
  if (budget.hard_usd !== null && spendUsd >= budget.hard_usd) return 'hard';
  if (budget.soft_usd !== null && spendUsd >= budget.soft_usd) return 'soft';
  return 'ok';
}

export function toBudget(row: BudgetRow) {
  return {
    id: row.id,
    name: row.name,
    scope: row.scope as BudgetScope,
    scopeValue: row.scope_value,
    window: row.window as BudgetWindow,
    softUsd: row.soft_usd,
    hardUsd: row.hard_usd,
    pauseOnHard: row.pause_on_hard === 1,
    enabled: row.enabled === 1,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export interface BudgetInput {
  name: string;
  scope: BudgetScope;
  scopeValue: string | null;
  window: BudgetWindow;
  softUsd: number | null;
  hardUsd: number | null;
  pauseOnHard: boolean;
  enabled: boolean;
}

export async function allBudgets(database: GateDatabase): Promise<BudgetRow[]> {
  return database.db.selectFrom('budgets').selectAll().orderBy('name').execute();
}

export async function findBudget(database: GateDatabase, id: string): Promise<BudgetRow | undefined> {
  return database.db.selectFrom('budgets').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function budgetNamed(database: GateDatabase, name: string): Promise<BudgetRow | undefined> {
  return database.db.selectFrom('budgets').selectAll().where('name', '=', name).executeTakeFirst();
}

/** A budget's settings as its row stores them (everything but id and times). */
export function budgetColumns(input: BudgetInput): Omit<BudgetRow, 'id' | 'created_at' | 'updated_at'> {
  return {
    name: input.name,
    scope: input.scope,
    scope_value: input.scopeValue,
    window: input.window,
    soft_usd: input.softUsd,
    hard_usd: input.hardUsd,
    pause_on_hard: input.pauseOnHard ? 1 : 0,
    enabled: input.enabled ? 1 : 0,
  };
}

export async function insertBudget(database: GateDatabase, input: BudgetInput, actor: ChangeActor, now: number): Promise<BudgetRow> {
  const row: BudgetRow = { id: newId(), ...budgetColumns(input), created_at: now, updated_at: now };
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('budgets').values(row).execute();
    await recordChange(
      trx,
      { resource: BUDGET_CHANGES, resourceId: row.id, action: 'created', actor, before: null, after: toBudget(row), state: budgetState(row) },
      now,
    );
  });
  return row;
}

/** Applies `changes` (already validated as a whole); undefined when no such budget exists. */
export async function updateBudget(
  database: GateDatabase,
  id: string,
  next: (before: BudgetRow) => Partial<BudgetRow>,
  actor: ChangeActor,
  now: number,
): Promise<BudgetRow | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('budgets').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return undefined;
    const changes = { ...next(before), updated_at: now };
    await trx.updateTable('budgets').set(changes).where('id', '=', id).execute();
    const after: BudgetRow = { ...before, ...changes };
    await recordUpdate(trx, { resource: BUDGET_CHANGES, resourceId: id, actor, before, after, show: toBudget, state: budgetState }, now);
    return after;
  });
}

export async function deleteBudget(database: GateDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const before = await trx.deleteFrom('budgets').where('id', '=', id).returningAll().executeTakeFirst();
    if (!before) return false;
    await trx.deleteFrom('budget_figures').where('budget_id', '=', id).execute();
    await recordChange(trx, { resource: BUDGET_CHANGES, resourceId: id, action: 'deleted', actor, before: toBudget(before), after: null, state: null }, now);
    return true;
  });
}

/** The figures of the given (budget, window start, key) triples that exist. */
export async function figuresOf(database: GateDatabase, wanted: readonly { budgetId: string; windowStart: number; key: string }[]): Promise<BudgetFigureRow[]> {
  if (wanted.length === 0) return [];
  return database.db
    .selectFrom('budget_figures')
    .selectAll()
    .where((eb) => eb.or(wanted.map((w) => eb.and([eb('budget_id', '=', w.budgetId), eb('window_start', '=', w.windowStart), eb('key', '=', w.key)]))))
    .execute();
}

/** Every figure of a budget in one window, highest spend first (its page in the API and the dashboard). */
export async function figuresOfBudget(database: GateDatabase, budgetId: string, start: number, limit: number): Promise<BudgetFigureRow[]> {
  return database.db
    .selectFrom('budget_figures')
    .selectAll()
    .where('budget_id', '=', budgetId)
    .where('window_start', '=', start)
    .orderBy('spend_usd', 'desc')
    .orderBy('key')
    .limit(limit)
    .execute();
}

/** Stores a figure, never lowering one already stored for the window (several observe reads may land out of order). */
export async function storeFigure(trx: Transaction<GateSchema>, row: BudgetFigureRow): Promise<void> {
  await trx
    .insertInto('budget_figures')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['budget_id', 'window_start', 'key']).doUpdateSet({
        spend_usd: sql<number>`case when excluded.spend_usd > budget_figures.spend_usd then excluded.spend_usd else budget_figures.spend_usd end`,
        agent_ids: sql<string>`excluded.agent_ids`,
        updated_at: sql<number>`excluded.updated_at`,
      }),
    )
    .execute();
}

/**
 * Records a breach once (its primary key): true for the one transaction, of any instance, that
 * inserts it; that transaction also writes its change-log entry (action `breached`).
 */
export async function recordBreach(
  trx: Transaction<GateSchema>,
  budget: BudgetRow,
  breach: { windowStart: number; key: string; level: 'soft' | 'hard'; spendUsd: number; agentIds: string[] },
  now: number,
): Promise<boolean> {
  const inserted = await trx
    .insertInto('budget_breaches')
    .values({ budget_id: budget.id, window_start: breach.windowStart, key: breach.key, level: breach.level, spend_usd: breach.spendUsd, at: now })
    .onConflict((oc) => oc.doNothing())
    .returning('budget_id')
    .executeTakeFirst();
  if (!inserted) return false;
  await recordChange(
    trx,
    {
      resource: BUDGET_CHANGES,
      resourceId: budget.id,
      action: 'breached',
      actor: BUDGET_ACTOR,
      before: null,
      after: {
        budget: budget.name,
        level: breach.level,
        thresholdUsd: breach.level === 'hard' ? budget.hard_usd : budget.soft_usd,
        spendUsd: breach.spendUsd,
        window: budget.window,
        windowStart: toIso(breach.windowStart),
        key: breach.key,
        agentIds: breach.agentIds,
      },
      // The budget itself is unchanged: its governed state stays what its last change logged.
      state: budgetState(budget),
    },
    now,
  );
  return true;
}

export async function breachesOf(database: GateDatabase, budgetId: string, limit: number) {
  return database.db.selectFrom('budget_breaches').selectAll().where('budget_id', '=', budgetId).orderBy('at', 'desc').limit(limit).execute();
}
