import { canonicalJson, floatType, newId, toIso } from '@vigil/platform';
import { roundUsd } from '@vigil/pricing';
import { sql, type Kysely } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { DatasetCaseRow, DatasetRow, EvalRunCaseRow, EvalRunRow, EvaluatorRow, JudgeCallRow } from './tables.ts';
import type { SessionRow } from '../events/index.ts';
import { addUsdSql } from '../events/index.ts';
import type { SessionFacts } from './rules.ts';
import type {
  ComplianceRule,
  CreateDatasetBody,
  CreateEvaluatorBody,
  DatasetOut,
  DatasetSummaryOut,
  EvaluatorKind,
  EvaluatorOut,
  RunOut,
  Severity,
} from './schemas.ts';
import type { TranscriptEvent } from './transcript.ts';

type Executor = Kysely<ObserveSchema>;

const EVAL_RESULT = 'eval_result';
const INSERT_CHUNK = 200;

// ---------------------------------------------------------------------------------------------
// Session facts and transcript (read from the events, in SQL)
// ---------------------------------------------------------------------------------------------

/**
 * The facts of a session as of its row (head `last_seq`, spend `total_cost_usd`, both kept by the
 * ingest transaction under the session lock): tool calls per tool name and events per severity
 * (eval_result excluded) up to that head, in SQL. Every event counts; nothing is sampled or capped.
 */
export async function sessionFacts(db: Executor, session: Pick<SessionRow, 'id' | 'last_seq' | 'total_cost_usd'>): Promise<SessionFacts> {
  const scoped = db.selectFrom('events').where('session_id', '=', session.id).where('seq', '<=', session.last_seq);
  const [tools, severities] = await Promise.all([
    scoped
      .select(['tool_name', (eb) => eb.fn.countAll<number>().as('calls')])
      .where('event_type', '=', 'tool_call')
      .where('tool_name', 'is not', null)
      .groupBy('tool_name')
      .orderBy('tool_name')
      .execute(),
    scoped
      .select(['severity', (eb) => eb.fn.countAll<number>().as('n')])
      .where('event_type', '<>', EVAL_RESULT)
      .groupBy('severity')
      .execute(),
  ]);
  const severityCounts: Partial<Record<Severity, number>> = {};
  for (const row of severities) severityCounts[row.severity as Severity] = Number(row.n);
  return {
    // Sorted by UTF-16 code units in JS: both databases' collations may differ.
    toolCalls: tools.map((r) => ({ tool: r.tool_name!, calls: Number(r.calls) })).sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0)),
    severityCounts,
    spendUsd: roundUsd(Number(session.total_cost_usd)),
  };
}

/** A page of the session's events (eval_result excluded) in seq order, after `afterSeq`, up to throughSeq. */
export async function transcriptPage(db: Executor, sessionId: string, afterSeq: number, throughSeq: number, limit: number): Promise<TranscriptEvent[]> {
  const rows = await db
    .selectFrom('events')
    .select(['seq', 'ts', 'event_type', 'severity', 'payload'])
    .where('session_id', '=', sessionId)
    .where('seq', '>', afterSeq)
    .where('seq', '<=', throughSeq)
    .where('event_type', '<>', EVAL_RESULT)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ seq: r.seq, timestamp: toIso(Number(r.ts)), eventType: r.event_type, severity: r.severity, payload: r.payload }));
}

// ---------------------------------------------------------------------------------------------
// Evaluators
// ---------------------------------------------------------------------------------------------

export interface Evaluator {
  id: string;
  name: string;
  kind: EvaluatorKind;
  rules: ComplianceRule[] | null;
  rubric: string | null;
  passThreshold: number | null;
  model: string | null;
  createdAt: number;
}

export function decodeEvaluator(row: EvaluatorRow): Evaluator {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind as EvaluatorKind,
    rules: row.rules === null ? null : (JSON.parse(row.rules) as ComplianceRule[]),
    rubric: row.rubric,
    passThreshold: row.pass_threshold,
    model: row.model,
    createdAt: Number(row.created_at),
  };
}

export function toEvaluatorOut(evaluator: Evaluator): EvaluatorOut {
  return {
    id: evaluator.id,
    name: evaluator.name,
    kind: evaluator.kind,
    rules: evaluator.rules,
    rubric: evaluator.rubric,
    passThreshold: evaluator.passThreshold,
    model: evaluator.model,
    createdAt: toIso(evaluator.createdAt),
  };
}

export async function insertEvaluator(database: ObserveDatabase, body: CreateEvaluatorBody, now: number): Promise<Evaluator> {
  const row: EvaluatorRow = {
    id: newId(),
    name: body.name,
    kind: body.kind,
    rules: body.rules === undefined ? null : JSON.stringify(body.rules),
    rubric: body.rubric ?? null,
    pass_threshold: body.passThreshold ?? null,
    model: body.model ?? null,
    created_at: now,
  };
  await database.db.insertInto('evaluators').values(row).execute();
  return decodeEvaluator(row);
}

/** Newest first (ids are time-ordered, so ties on createdAt are stable). */
export async function listEvaluators(database: ObserveDatabase): Promise<Evaluator[]> {
  const rows = await database.db.selectFrom('evaluators').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(decodeEvaluator);
}

export async function findEvaluator(database: ObserveDatabase, id: string): Promise<Evaluator | undefined> {
  const row = await database.db.selectFrom('evaluators').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decodeEvaluator(row);
}

export async function deleteEvaluator(database: ObserveDatabase, id: string): Promise<boolean> {
  const result = await database.db.deleteFrom('evaluators').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

// ---------------------------------------------------------------------------------------------
// Judge calls (judge spend)
// ---------------------------------------------------------------------------------------------

/** The call and its cost in the spend total (judge_spend), in one transaction: the total counts exactly the calls stored. */
export async function insertJudgeCall(database: ObserveDatabase, row: JudgeCallRow): Promise<void> {
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('judge_calls').values(row).execute();
    await trx
      .updateTable('judge_spend')
      .set({ usd: addUsdSql(sql.ref('usd'), sql`cast(${row.cost_usd} as ${sql.raw(floatType)})`) })
      .where('id', '=', 1)
      .execute();
  });
}

export async function setJudgeCallEvent(database: ObserveDatabase, id: string, eventId: string): Promise<void> {
  await database.db.updateTable('judge_calls').set({ event_id: eventId }).where('id', '=', id).execute();
}

// ---------------------------------------------------------------------------------------------
// Datasets
// ---------------------------------------------------------------------------------------------

const parseJson = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

export function toDatasetSummary(row: DatasetRow): DatasetSummaryOut {
  return { id: row.id, name: row.name, caseCount: row.case_count, createdAt: toIso(Number(row.created_at)) };
}

export function toDatasetOut(row: DatasetRow, cases: readonly DatasetCaseRow[]): DatasetOut {
  return {
    ...toDatasetSummary(row),
    cases: cases.map((c) => ({ id: c.id, index: c.position, input: parseJson(c.input), expected: parseJson(c.expected) })),
  };
}

/** The dataset and its cases, in one transaction. An `expected` of null is stored as absent. */
export async function insertDataset(database: ObserveDatabase, body: CreateDatasetBody, now: number): Promise<{ row: DatasetRow; cases: DatasetCaseRow[] }> {
  const row: DatasetRow = { id: newId(), name: body.name, case_count: body.cases.length, created_at: now };
  const cases: DatasetCaseRow[] = body.cases.map((c, position) => ({
    id: newId(),
    dataset_id: row.id,
    position,
    input: canonicalJson(c.input),
    expected: c.expected === undefined || c.expected === null ? null : canonicalJson(c.expected),
  }));
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('datasets').values(row).execute();
    for (let i = 0; i < cases.length; i += INSERT_CHUNK)
      await trx
        .insertInto('dataset_cases')
        .values(cases.slice(i, i + INSERT_CHUNK))
        .execute();
  });
  return { row, cases };
}

export async function listDatasets(database: ObserveDatabase): Promise<DatasetRow[]> {
  return database.db.selectFrom('datasets').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function findDataset(db: Executor, id: string): Promise<DatasetRow | undefined> {
  return db.selectFrom('datasets').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function datasetCases(db: Executor, datasetId: string): Promise<DatasetCaseRow[]> {
  return db.selectFrom('dataset_cases').selectAll().where('dataset_id', '=', datasetId).orderBy('position').execute();
}

// ---------------------------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------------------------

export interface NewRun {
  datasetId: string;
  agentId: string;
  webhookUrl: string;
  evaluator: Evaluator | null;
  caseTimeoutMs: number;
}

/** The run and one pending row per case of its dataset, in one transaction; undefined when the dataset is gone. */
export async function insertRun(database: ObserveDatabase, run: NewRun, now: number): Promise<EvalRunRow | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const dataset = await findDataset(trx, run.datasetId);
    if (!dataset) return undefined;
    const cases = await trx.selectFrom('dataset_cases').select(['id', 'position']).where('dataset_id', '=', run.datasetId).orderBy('position').execute();
    const row: EvalRunRow = {
      id: newId(),
      dataset_id: run.datasetId,
      agent_id: run.agentId,
      webhook_url: run.webhookUrl,
      evaluator_id: run.evaluator?.id ?? null,
      evaluator: run.evaluator === null ? null : JSON.stringify(run.evaluator),
      case_timeout_ms: run.caseTimeoutMs,
      status: 'running',
      total_cases: cases.length,
      completed_cases: 0,
      passed_cases: 0,
      failed_cases: 0,
      created_at: now,
      finished_at: null,
    };
    await trx.insertInto('eval_runs').values(row).execute();
    const rows: EvalRunCaseRow[] = cases.map((c) => ({
      run_id: row.id,
      position: c.position,
      case_id: c.id,
      status: 'pending',
      claimed_until: null,
      attempts: 0,
      session_id: null,
      passed: null,
      score: null,
      error: null,
      output: null,
      reasoning: null,
      finished_at: null,
    }));
    for (let i = 0; i < rows.length; i += INSERT_CHUNK)
      await trx
        .insertInto('eval_run_cases')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .execute();
    return row;
  });
}

export async function findRun(db: Executor, id: string): Promise<EvalRunRow | undefined> {
  return db.selectFrom('eval_runs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A dataset's runs, newest first (index eval_runs_dataset). */
export async function datasetRuns(db: Executor, datasetId: string, limit: number): Promise<EvalRunRow[]> {
  return db.selectFrom('eval_runs').selectAll().where('dataset_id', '=', datasetId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

export async function runCases(db: Executor, runId: string): Promise<EvalRunCaseRow[]> {
  return db.selectFrom('eval_run_cases').selectAll().where('run_id', '=', runId).orderBy('position').execute();
}

export function toRunSummary(run: EvalRunRow): Omit<RunOut, 'cases'> {
  return {
    id: run.id,
    datasetId: run.dataset_id,
    agentId: run.agent_id,
    evaluatorId: run.evaluator_id,
    status: run.status as RunOut['status'],
    totalCases: run.total_cases,
    completedCases: run.completed_cases,
    passedCases: run.passed_cases,
    failedCases: run.failed_cases,
    createdAt: toIso(Number(run.created_at)),
    finishedAt: run.finished_at === null ? null : toIso(Number(run.finished_at)),
  };
}

export function toRunOut(run: EvalRunRow, cases: readonly EvalRunCaseRow[]): RunOut {
  return {
    ...toRunSummary(run),
    cases: cases.map((c) => ({
      caseId: c.case_id,
      index: c.position,
      sessionId: c.session_id,
      passed: c.passed === null ? null : c.passed === 1,
      score: c.score,
      error: c.error,
      actual: c.output === null ? null : (JSON.parse(c.output) as unknown),
      reasoning: c.reasoning,
    })),
  };
}

/**
 * Forgets what the agents answered, and the reasoning about it, in the cases of these sessions (an
 * erasure of a subject they name: the answer may quote the subject's data).
 */
export async function forgetCaseAnswers(trx: Executor, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await trx
    .updateTable('eval_run_cases')
    .set({ output: null, reasoning: null })
    .where('session_id', 'in', [...sessionIds])
    .execute();
}

/** Pending cases whose claim is free (never claimed, or the claim ran out), oldest run first. */
export async function dueCases(db: Executor, now: number, limit: number): Promise<{ run_id: string; position: number }[]> {
  return db
    .selectFrom('eval_run_cases')
    .select(['run_id', 'position'])
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .orderBy('run_id')
    .orderBy('position')
    .limit(limit)
    .execute();
}

/** Takes the case until `until` if it is still pending and free; false when another worker holds it or it is done. */
export async function claimCase(db: Executor, runId: string, position: number, now: number, until: number): Promise<boolean> {
  const result = await db
    .updateTable('eval_run_cases')
    .set({ claimed_until: until, attempts: sql`attempts + 1` })
    .where('run_id', '=', runId)
    .where('position', '=', position)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export interface ClaimedCase {
  run: EvalRunRow;
  runCase: EvalRunCaseRow;
  datasetCase: DatasetCaseRow;
}

export async function loadClaimedCase(db: Executor, runId: string, position: number): Promise<ClaimedCase | undefined> {
  const run = await findRun(db, runId);
  const runCase = await db.selectFrom('eval_run_cases').selectAll().where('run_id', '=', runId).where('position', '=', position).executeTakeFirst();
  if (!run || !runCase) return undefined;
  const datasetCase = await db.selectFrom('dataset_cases').selectAll().where('id', '=', runCase.case_id).executeTakeFirst();
  return datasetCase ? { run, runCase, datasetCase } : undefined;
}

export interface CaseOutcome {
  sessionId: string | null;
  passed: boolean;
  score: number | null;
  error: string | null;
  /** Canonical JSON of the webhook's output, when it answered one. */
  output: string | null;
  reasoning: string | null;
}

/**
 * Records a case's outcome once (the first outcome wins) and, in the same transaction, counts it
 * on the run; the run completes with its last case. Returns false when the case already had one.
 */
export async function recordCaseOutcome(database: ObserveDatabase, runId: string, position: number, outcome: CaseOutcome, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('eval_run_cases')
      .set({
        status: 'done',
        claimed_until: null,
        session_id: outcome.sessionId,
        passed: outcome.passed ? 1 : 0,
        score: outcome.score,
        error: outcome.error,
        output: outcome.output,
        reasoning: outcome.reasoning,
        finished_at: now,
      })
      .where('run_id', '=', runId)
      .where('position', '=', position)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) return false;
    const passed = outcome.passed ? 1 : 0;
    // SET expressions read the row as it was before this update, on both databases.
    const last = sql<boolean>`completed_cases + 1 >= total_cases`;
    await trx
      .updateTable('eval_runs')
      .set({
        completed_cases: sql`completed_cases + 1`,
        passed_cases: sql`passed_cases + ${passed}`,
        failed_cases: sql`failed_cases + ${1 - passed}`,
        status: sql`case when ${last} then 'completed' else status end`,
        finished_at: sql`case when ${last} then ${now} else finished_at end`,
      })
      .where('id', '=', runId)
      .execute();
    return true;
  });
}
