import { fetchWithTimeout, joinUrl, LoggedStates, type ZodApp } from '@vigil/platform';
import type { AuditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { requestParties, requestTags, type BudgetAssessment, type BudgetGuard } from '../requests/index.ts';
import type { GateSchema } from '../schema.ts';
import type { Notice } from '../webhooks/index.ts';
import {
  allBudgets,
  BUDGET_CHANGES,
  budgetColumns,
  budgetNamed,
  budgetState,
  deleteBudget,
  figuresOf,
  insertBudget,
  levelOf,
  recordBreach,
  storeFigure,
  updateBudget,
  windowStart,
  type BudgetInput,
} from './store.ts';
import type { BudgetRow } from './tables.ts';

const OBSERVE_TIMEOUT_MS = 2000;

/** What observe's POST /api/internal/spend answers. */
interface SpendAnswer {
  at: number;
  results: { id: string; windowStart: number; figures: { key: string; spendUsd: number; agentIds: string[] }[] }[];
}

/** A budget's figure key for a request, or undefined when the budget does not cover it (tag budgets: decided by covers()). */
function keyFor(budget: BudgetRow, agentId: string | undefined, sessionId: string | undefined): string | undefined {
  if (budget.window === 'session' || budget.scope === 'session') {
    if (sessionId === undefined) return undefined;
    if (budget.scope === 'session' && budget.scope_value !== null && budget.scope_value !== sessionId) return undefined;
    if (budget.scope === 'agent' && budget.scope_value !== null && budget.scope_value !== agentId) return undefined;
    return sessionId;
  }
  if (budget.scope === 'agent') {
    if (agentId === undefined || (budget.scope_value !== null && budget.scope_value !== agentId)) return undefined;
    return agentId;
  }
  if (budget.scope === 'tag') return budget.scope_value ?? undefined;
  return '*';
}

const LEVEL_RANK = { ok: 0, soft: 1, hard: 2 } as const;

/**
 * Budgets enforced at the gate. A job (one instance per tick, by its lease) reads the spend of every
 * enabled budget from observe (the figures of GET /api/analytics/costs) every BUDGET_POLL_MS, stores
 * the figures, records each threshold crossed once (change log, action `breached`) and pauses the
 * agents of a hard breach in observe. Every request's creation reads the figures that cover it
 * (assess): over a hard threshold it is denied, over a soft one routed to a person, and policies
 * see them as `budgets.<name>.spendUsd` / `.level`.
 */
export class BudgetService implements BudgetGuard {
  private readonly logged: LoggedStates<GateSchema>;
  private cached: { at: number; budgets: BudgetRow[] } | null = null;

  constructor(
    private readonly ctx: GateContext,
    private readonly log: ZodApp['log'],
  ) {
    this.logged = new LoggedStates(ctx.database.db, ctx.clock, ctx.config.cacheRefreshMs);
  }

  /** The enabled budgets as last read, while that read is fresh (cacheRefreshMs); undefined when they must be read again. */
  private fresh(now: number): BudgetRow[] | undefined {
    return this.cached && now - this.cached.at < this.ctx.config.cacheRefreshMs ? this.cached.budgets : undefined;
  }

  /** The enabled budgets as their last logged changes left them (re-read every cacheRefreshMs, at once after a change here). */
  async enabled(): Promise<BudgetRow[]> {
    const now = this.ctx.clock.now();
    const fresh = this.fresh(now);
    if (fresh !== undefined) return fresh;
    const budgets: BudgetRow[] = [];
    for (const row of await allBudgets(this.ctx.database)) {
      if (row.enabled !== 1) continue;
      const verdict = await this.logged.check(BUDGET_CHANGES, row.id, budgetState(row));
      if (verdict.logged) budgets.push(row);
      else this.log.warn({ budgetId: row.id, reason: verdict.reason }, `budget ${row.id} (${row.name}) is not applied: ${verdict.reason}`);
    }
    this.cached = { at: now, budgets };
    return budgets;
  }

  private changed(): void {
    this.cached = null;
    this.logged.forget();
  }

  async create(input: BudgetInput, by: AuditActor): Promise<BudgetRow> {
    validate(input);
    if (await budgetNamed(this.ctx.database, input.name)) throw gateError('budgetInvalid', `A budget named "${input.name}" exists`);
    const row = await insertBudget(this.ctx.database, input, by, this.ctx.clock.now());
    this.changed();
    return row;
  }

  async update(id: string, patch: Partial<BudgetInput>, by: AuditActor): Promise<BudgetRow> {
    if (patch.name !== undefined) {
      const named = await budgetNamed(this.ctx.database, patch.name);
      if (named && named.id !== id) throw gateError('budgetInvalid', `A budget named "${patch.name}" exists`);
    }
    const row = await updateBudget(
      this.ctx.database,
      id,
      (before) => {
        const merged: BudgetInput = {
          name: patch.name ?? before.name,
          scope: patch.scope ?? (before.scope as BudgetInput['scope']),
          scopeValue: patch.scopeValue !== undefined ? patch.scopeValue : before.scope_value,
          window: patch.window ?? (before.window as BudgetInput['window']),
          softUsd: patch.softUsd !== undefined ? patch.softUsd : before.soft_usd,
          hardUsd: patch.hardUsd !== undefined ? patch.hardUsd : before.hard_usd,
          pauseOnHard: patch.pauseOnHard ?? before.pause_on_hard === 1,
          enabled: patch.enabled ?? before.enabled === 1,
        };
        validate(merged);
        return budgetColumns(merged);
      },
      by,
      this.ctx.clock.now(),
    );
    if (!row) throw gateError('budgetNotFound');
    this.changed();
    return row;
  }

  async remove(id: string, by: AuditActor): Promise<void> {
    if (!(await deleteBudget(this.ctx.database, id, by, this.ctx.clock.now()))) throw gateError('budgetNotFound');
    this.changed();
  }

  /** The budgets that cover a new request, their figures now, and the worst threshold crossed; undefined at once while none is enabled. */
  assess(request: { context: Record<string, unknown> }, now: number): Promise<BudgetAssessment | undefined> | undefined {
    return this.fresh(now)?.length === 0 ? undefined : this.assessRead(request, now);
  }

  private async assessRead(request: { context: Record<string, unknown> }, now: number): Promise<BudgetAssessment | undefined> {
    const budgets = await this.enabled();
    if (budgets.length === 0) return undefined;
    const { agentId, sessionId } = requestParties(request.context);
    const tags = requestTags(request.context);
    const wanted = budgets.flatMap((budget) => {
      const key = keyFor(budget, agentId, sessionId);
      return key === undefined ? [] : [{ budget, budgetId: budget.id, windowStart: windowStart(budget.window, now), key }];
    });
    const figures = await figuresOf(this.ctx.database, wanted);
    const assessment: BudgetAssessment = { figures: {}, breach: null };
    for (const { budget, windowStart: start, key } of wanted) {
      const figure = figures.find((f) => f.budget_id === budget.id && Number(f.window_start) === start && f.key === key);
      // A tag budget covers a request whose context carries the tag (from its first request), and the agents that spent under the tag.
      if (
        budget.scope === 'tag' &&
        budget.window !== 'session' &&
        !tags.includes(key) &&
        !(figure && agentId !== undefined && (JSON.parse(figure.agent_ids) as string[]).includes(agentId))
      )
        continue;
      const spendUsd = figure ? Number(figure.spend_usd) : 0;
      const level = levelOf(budget, spendUsd);
      assessment.figures[budget.name] = { spendUsd, softUsd: budget.soft_usd, hardUsd: budget.hard_usd, level };
      if (level !== 'ok' && (assessment.breach === null || LEVEL_RANK[level] > LEVEL_RANK[assessment.breach.level])) {
        const threshold = level === 'hard' ? budget.hard_usd! : budget.soft_usd!;
        assessment.breach = {
          level,
          budgetId: budget.id,
          reason: `Budget "${budget.name}" ${level} threshold $${threshold} reached: $${spendUsd} spent (${budget.window} window${key === '*' ? '' : `, ${key}`})`,
        };
      }
    }
    return assessment;
  }

  /**
   * One poll: reads every enabled budget's figures from observe, stores them, records each threshold
   * crossed once, and pauses the agents of a hard breach. Nothing without the observe link
   * (OBSERVE_URL and INTERNAL_SERVICE_TOKEN).
   */
  async poll(): Promise<void> {
    const observe = this.ctx.config.observe;
    if (!observe?.serviceToken) return;
    const budgets = await this.enabled();
    if (budgets.length === 0) return;
    const queries = budgets.map((b) => ({
      id: b.id,
      scope: b.scope,
      ...(b.scope_value !== null && { value: b.scope_value }),
      window: b.window,
      minUsd: Math.min(b.soft_usd ?? Number.POSITIVE_INFINITY, b.hard_usd ?? Number.POSITIVE_INFINITY, 1e12),
    }));
    const response = await fetchWithTimeout(joinUrl(observe.url, '/api/internal/spend'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${observe.serviceToken}` },
      body: JSON.stringify({ queries }),
      timeoutMs: OBSERVE_TIMEOUT_MS,
    });
    if (!response.ok) {
      this.log.warn({ status: response.status, body: (await response.text()).slice(0, 500) }, 'observe did not answer the budgets their spend');
      return;
    }
    const answer = (await response.json()) as SpendAnswer;
    const now = this.ctx.clock.now();
    const byId = new Map(budgets.map((b) => [b.id, b]));
    const pauses: { agentId: string; reason: string }[] = [];
    await this.ctx.outbox.withNotices((announce) =>
      this.ctx.database.db.transaction().execute(async (trx) => {
        const notices: Notice[] = [];
        for (const result of answer.results) {
          const budget = byId.get(result.id);
          if (!budget) continue;
          for (const figure of result.figures) {
            await storeFigure(trx, {
              budget_id: budget.id,
              window_start: result.windowStart,
              key: figure.key,
              spend_usd: figure.spendUsd,
              agent_ids: JSON.stringify(figure.agentIds),
              updated_at: now,
            });
            const level = levelOf(budget, figure.spendUsd);
            const crossed =
              level === 'hard' ? (budget.soft_usd !== null ? (['soft', 'hard'] as const) : (['hard'] as const)) : level === 'soft' ? (['soft'] as const) : [];
            for (const reached of crossed) {
              const breach = { windowStart: result.windowStart, key: figure.key, level: reached, spendUsd: figure.spendUsd, agentIds: figure.agentIds };
              if (!(await recordBreach(trx, budget, breach, now))) continue;
              const pausing = reached === 'hard' && budget.pause_on_hard === 1;
              if (pausing) {
                const reason = `Budget "${budget.name}" hard threshold $${budget.hard_usd} reached: $${figure.spendUsd} spent (${budget.window} window)`;
                for (const agentId of figure.agentIds) pauses.push({ agentId, reason });
              }
              // Budgets name no channels: each platform's default channel hears of every breach.
              notices.push({
                event: 'budget.breached',
                channels: [],
                budget: {
                  id: budget.id,
                  name: budget.name,
                  level: reached,
                  thresholdUsd: reached === 'hard' ? budget.hard_usd! : budget.soft_usd!,
                  spendUsd: figure.spendUsd,
                  window: budget.window,
                  key: figure.key,
                  pausedAgents: pausing ? figure.agentIds : [],
                },
              });
            }
          }
        }
        await announce(trx, notices);
      }),
    );
    for (const pause of pauses) await this.pause(pause.agentId, pause.reason);
  }

  /** Pauses an agent in observe (the pause the agent reads from GET /api/agents/:id); failures are logged. */
  private async pause(agentId: string, reason: string): Promise<void> {
    const observe = this.ctx.config.observe!;
    try {
      const response = await fetchWithTimeout(joinUrl(observe.url, `/api/internal/agents/${encodeURIComponent(agentId)}/pause`), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${observe.serviceToken}` },
        body: JSON.stringify({ reason }),
        timeoutMs: OBSERVE_TIMEOUT_MS,
      });
      await response.arrayBuffer();
      if (!response.ok) this.log.warn({ status: response.status, agentId }, 'observe refused to pause the agent of a budget breach');
    } catch (error) {
      this.log.warn({ err: error, agentId }, 'could not pause the agent of a budget breach');
    }
  }
}

function validate(input: BudgetInput): void {
  if (input.scope === 'tenant' && input.scopeValue !== null) throw gateError('budgetInvalid', 'A tenant budget takes no scopeValue');
  if (input.scope === 'tag' && input.scopeValue === null) throw gateError('budgetInvalid', 'A tag budget needs its tag in scopeValue');
  if (input.softUsd !== null && input.hardUsd !== null && input.softUsd > input.hardUsd) throw gateError('budgetInvalid', 'softUsd is above hardUsd');
}
