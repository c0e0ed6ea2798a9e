// The tables budgets/ owns (times are epoch milliseconds, amounts USD); the service's schema
// (schema.ts) is composed of every feature's tables.

/** A budget: a scope's spend in a window, with a soft and a hard threshold (either may be unset). Governed by the change log. */
export interface BudgetRow {
  id: string;
  /** Unique, and usable in policy paths: `budgets.<name>.spendUsd`. */
  name: string;
  scope: string;
  /** The agent, session or tag; null: each agent / each session, or the tenant. */
  scope_value: string | null;
  window: string;
  soft_usd: number | null;
  hard_usd: number | null;
  pause_on_hard: number;
  enabled: number;
  created_at: number;
  updated_at: number;
}

/** The last spend read from observe for one key of a budget in one window (never lowered within the window). */
export interface BudgetFigureRow {
  budget_id: string;
  window_start: number;
  /** The agent, session, tag or `*` (tenant) the figure is of. */
  key: string;
  spend_usd: number;
  /** JSON array: the agents whose spend it is (the ones a hard breach pauses). */
  agent_ids: string;
  updated_at: number;
}

/** A threshold crossed, once per budget, window, key and level: its row decides which instance records and acts on it. */
export interface BudgetBreachRow {
  budget_id: string;
  window_start: number;
  key: string;
  level: string;
  spend_usd: number;
  at: number;
}

export interface BudgetsTables {
  budgets: BudgetRow;
  budget_figures: BudgetFigureRow;
  budget_breaches: BudgetBreachRow;
}
