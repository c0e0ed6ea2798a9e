// The tables evals/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

/** A saved evaluator (evals/): the rules or rubric of a compliance evaluation, referenced by id. */
export interface EvaluatorRow {
  id: string;
  name: string;
  /** compliance or llm_judge. */
  kind: string;
  /** JSON array of compliance rules (compliance only). */
  rules: string | null;
  /** llm_judge only. */
  rubric: string | null;
  pass_threshold: number | null;
  /** llm_judge only; null: the configured default judge model. */
  model: string | null;
  created_at: number;
}

/**
 * One row per call of the LLM judge that the provider billed (evals/): its verdict and cost, or why
 * it gave none. Judge spend (GET /api/stats judgeSpendUsd) is the sum of cost_usd, apart from any
 * session's spend; rows are written before the verdict is chained, so money spent is never missed.
 */
export interface JudgeCallRow {
  id: string;
  session_id: string;
  evaluator_id: string | null;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  score: number | null;
  /** 1 or 0; null when the call gave no verdict. */
  passed: number | null;
  /** The chained eval_result; null until appended, and for a call without a verdict. */
  event_id: string | null;
  error: string | null;
  created_at: number;
}

/** One row (id 1): the sum of judge_calls' cost_usd, kept in the transaction that inserts each call (migration 0023 filled it). */
export interface JudgeSpendRow {
  id: number;
  usd: number;
}

/** A dataset of cases for evaluation runs (evals/). */
export interface DatasetRow {
  id: string;
  name: string;
  case_count: number;
  created_at: number;
}

export interface DatasetCaseRow {
  id: string;
  dataset_id: string;
  /** 0-based order of the case in the dataset. */
  position: number;
  /** Canonical JSON. */
  input: string;
  /** Canonical JSON; null when no expected output was given. */
  expected: string | null;
}

/** A run of a dataset against an agent webhook; counters are kept with each case outcome. */
export interface EvalRunRow {
  id: string;
  dataset_id: string;
  agent_id: string;
  webhook_url: string;
  evaluator_id: string | null;
  /** JSON snapshot of the evaluator when the run was created (a later delete does not change the run). */
  evaluator: string | null;
  case_timeout_ms: number;
  /** running or completed. */
  status: string;
  total_cases: number;
  completed_cases: number;
  passed_cases: number;
  failed_cases: number;
  created_at: number;
  finished_at: number | null;
}

/** One case of a run: pending until its outcome is recorded (once). */
export interface EvalRunCaseRow {
  run_id: string;
  position: number;
  case_id: string;
  /** pending or done. */
  status: string;
  /** Set while a worker holds the case; a claim that outlives this is free again (crash recovery). */
  claimed_until: number | null;
  attempts: number;
  session_id: string | null;
  /** 1 or 0 once done. */
  passed: number | null;
  score: number | null;
  error: string | null;
  /** Canonical JSON of the output the agent's webhook answered (null: none); since migration 0041. */
  output: string | null;
  /** The evaluator's reasoning (null without an evaluator, or when scoring failed); since migration 0041. */
  reasoning: string | null;
  finished_at: number | null;
}

/** Evaluators, the LLM judge calls and their spend, datasets and evaluation runs. */
export interface EvalsTables {
  evaluators: EvaluatorRow;
  judge_calls: JudgeCallRow;
  judge_spend: JudgeSpendRow;
  datasets: DatasetRow;
  dataset_cases: DatasetCaseRow;
  eval_runs: EvalRunRow;
  eval_run_cases: EvalRunCaseRow;
}
