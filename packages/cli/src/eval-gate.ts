/**
 * `vigil eval-gate`: exits non-zero when an evaluation pass rate is below a threshold, for CI.
 *
 * Trace scoring scores existing sessions with a saved evaluator; dataset mode has the server send
 * every case of a dataset to a live agent webhook and score the sessions it logs. Exit codes: 0 the
 * pass rate reaches --min-pass-rate, 1 it does not or a session's hash chain is broken (the server
 * refuses to chain a verdict onto it; in dataset mode each case's session is verified), 2 anything
 * that prevents a verdict (usage, connection or HTTP error, a dataset run that does not finish in
 * time, nothing to evaluate).
 */
import { Command, CommanderError } from 'commander';
import {
  EXIT_BELOW_THRESHOLD,
  EXIT_ERROR,
  EXIT_PASS,
  DEFAULT_CONCURRENCY,
  DEFAULT_LIMIT,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_URL,
  MAX_CASE_TIMEOUT_SECONDS,
  MAX_CONCURRENCY,
  MAX_LIMIT,
  UsageError,
  brokenChainLine,
  formatScore,
  liveProgressWanted,
  renderTable,
  resolveGateOptions,
  resultLabel,
  truncate,
  verdict,
  verdictLine,
  type BrokenChain,
  type DatasetPlan,
  type GatePlan,
  type RawGateOptions,
  type TracePlan,
  type Verdict,
} from './eval-gate-core.ts';
import { ApiClient, ApiError, formatSeconds, pathSegment } from './eval-gate-http.ts';

// ---------------------------------------------------------------------------------------------
// Server answers (only the fields the gate reads)

interface Evaluator {
  id: string;
  name?: string;
  kind: string;
}

interface SessionList {
  sessions: Array<{ id: string }>;
}

interface EvalResult {
  sessionId?: string;
  method?: string;
  score: number;
  passed: boolean;
  reasoning?: string;
  violations?: Array<{ ruleId?: string; ruleType?: string; detail?: string }>;
}

interface RunCase {
  caseId?: string;
  index: number;
  sessionId?: string | null;
  passed?: boolean | null;
  score?: number | null;
  error?: string | null;
  reasoning?: string | null;
}

interface DatasetRun {
  id: string;
  status: string;
  totalCases: number;
  completedCases?: number;
  passedCases: number;
  failedCases?: number;
  cases?: RunCase[];
  error?: string | null;
}

interface ChainVerification {
  valid: boolean;
  brokenAt?: BrokenChain['brokenAt'];
}

/** Statuses of a dataset run that is still working; `completed` ends it; anything else is a failed run. */
const ACTIVE_RUN_STATUSES = new Set(['pending', 'queued', 'running']);
const POLL_FIRST_DELAY_MS = 250;
const POLL_MAX_DELAY_MS = 2000;
/** Consecutive failed polls (no answer or 5xx) tolerated before giving up. */
const POLL_MAX_FAILURES = 3;
const REASON_WIDTH = 60;
const ID_WIDTH = 40;

// ---------------------------------------------------------------------------------------------
// Output

interface Io {
  out(text: string): void;
  err(text: string): void;
  /** A live, self-rewriting progress line on stderr (terminal, not CI) instead of one line per item. */
  live: boolean;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Live mode: one stderr line redrawn in place. Plain mode: `note` lines only, nothing redrawn. */
class Progress {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private status = '';

  constructor(private readonly io: Io) {}

  start(status: string): void {
    this.status = status;
    if (!this.io.live) return;
    this.draw();
    this.timer = setInterval(() => this.draw(), 120);
    this.timer.unref();
  }

  update(status: string): void {
    this.status = status;
    if (this.io.live) this.draw();
  }

  /** A line for logs; in live mode it is not printed (the final table shows every item). */
  note(text: string): void {
    if (!this.io.live) this.io.err(`${text}\n`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.io.live) this.io.err('\r\x1b[2K');
  }

  private draw(): void {
    this.frame = (this.frame + 1) % SPINNER.length;
    const columns = process.stderr.columns || 100;
    this.io.err(`\r\x1b[2K${truncate(`${SPINNER[this.frame]} ${this.status}`, Math.max(20, columns - 1))}`);
  }
}

interface Row {
  cells: string[];
}

/**
 * Prints the result and returns the exit code: 1 when the pass rate is below the minimum or any
 * session's hash chain is broken (a verdict on a broken chain proves nothing, so the gate fails).
 */
function finish(io: Io, plan: GatePlan, headers: string[], rows: Row[], v: Verdict, broken: BrokenChain[], json: () => Record<string, unknown>): number {
  const ok = v.ok && broken.length === 0;
  for (const chain of broken) io.err(`vigil eval-gate: ${brokenChainLine(chain)}\n`);
  if (plan.json) {
    const { mode, ...rest } = json();
    io.out(`${JSON.stringify({ mode, result: ok ? 'pass' : 'fail', ...rest, brokenChains: broken }, null, 2)}\n`);
  } else {
    const failures = broken.map((chain) => `\nFAIL: ${brokenChainLine(chain)}`).join('');
    io.out(
      `\n${renderTable(
        headers,
        rows.map((r) => r.cells),
      )}\n\n${verdictLine(v)}${failures}\n`,
    );
  }
  return ok ? EXIT_PASS : EXIT_BELOW_THRESHOLD;
}

/** The session's chain as the server verifies it now; undefined when it verifies. */
async function brokenChainOf(api: ApiClient, sessionId: string): Promise<BrokenChain | undefined> {
  const path = `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}`;
  const verification = await api.get<ChainVerification>(path);
  if (typeof verification.valid !== 'boolean') throw new ApiError(`GET ${path} answered without a valid flag`);
  return verification.valid ? undefined : { sessionId, brokenAt: verification.brokenAt ?? null };
}

class GateError extends Error {
  override name = 'GateError';
}

// ---------------------------------------------------------------------------------------------
// Trace scoring

/** What the table and log lines show: for a failed compliance check its violations (the crux), else the reasoning. */
function reasonOf(result: EvalResult): string {
  const violations = (result.violations ?? []).map((v) => (v.ruleId && v.detail ? `${v.ruleId}: ${v.detail}` : (v.detail ?? v.ruleId ?? ''))).filter(Boolean);
  if (!result.passed && violations.length > 0) return violations.join('; ');
  return typeof result.reasoning === 'string' ? result.reasoning : violations.join('; ');
}

function checkResult(body: unknown, what: string): EvalResult {
  const result = body as Partial<EvalResult>;
  if (typeof result.score !== 'number' || typeof result.passed !== 'boolean') {
    throw new ApiError(`${what} answered without a numeric score and a passed flag`);
  }
  return result as EvalResult;
}

async function traceMode(plan: TracePlan, io: Io): Promise<number> {
  const controller = new AbortController();
  const api = new ApiClient({ baseUrl: plan.url, apiKey: plan.apiKey, timeoutMs: plan.requestTimeoutMs, signal: controller.signal });
  const evaluator = await api.get<Evaluator>(`/api/evaluators/${pathSegment(plan.evaluatorId)}`);
  if (evaluator.kind !== 'compliance' && evaluator.kind !== 'llm_judge') {
    throw new GateError(`evaluator ${plan.evaluatorId} has kind "${String(evaluator.kind)}"; eval-gate scores with compliance or llm_judge evaluators`);
  }
  const endpoint = evaluator.kind === 'compliance' ? 'compliance' : 'score';

  let ids: string[];
  if (plan.sessions.kind === 'ids') {
    ids = plan.sessions.ids;
  } else {
    const query = new URLSearchParams({ agentId: plan.sessions.agentId, limit: String(plan.sessions.limit) });
    const list = await api.get<SessionList>(`/api/sessions?${query}`);
    if (!Array.isArray(list.sessions)) throw new ApiError('GET /api/sessions answered without a sessions list');
    ids = list.sessions.map((s) => s.id);
    if (ids.length === 0) {
      throw new GateError(`agent "${plan.sessions.agentId}" has no sessions on ${plan.url}: nothing to score, so no pass rate (exit 2)`);
    }
  }

  const evaluatorName = evaluator.name ? `"${evaluator.name}" ` : '';
  const progress = new Progress(io);
  progress.note(
    `Scoring ${ids.length} session${ids.length === 1 ? '' : 's'} with evaluator ${evaluatorName}(${evaluator.kind}, ${plan.evaluatorId}) on ${plan.url}`,
  );
  const results: Array<EvalResult | undefined> = new Array(ids.length);
  const brokenAt: Array<BrokenChain | undefined> = new Array(ids.length);
  let done = 0;
  let passedSoFar = 0;
  const status = (): string =>
    `Scoring ${done}/${ids.length} sessions (${passedSoFar} passed, ${done - passedSoFar} failed) with ${evaluator.kind} evaluator ${plan.evaluatorId} …`;
  progress.start(status());

  let next = 0;
  let failure: Error | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < ids.length) {
      const index = next++;
      const sessionId = ids[index]!;
      const path = `/api/eval/sessions/${pathSegment(sessionId)}/${endpoint}`;
      try {
        const { body } = await api.post<unknown>(path, { evaluatorId: plan.evaluatorId });
        const result = checkResult(body, `POST ${path}`);
        results[index] = result;
        done++;
        if (result.passed) passedSoFar++;
        progress.note(
          `[${done}/${ids.length}] ${sessionId}: ${result.passed ? 'PASS' : 'FAIL'} (score ${formatScore(result.score)})${result.passed ? '' : ` ${truncate(reasonOf(result), 120)}`}`,
        );
        progress.update(status());
      } catch (error) {
        try {
          // 409: the server refuses to append a verdict to a broken chain; the gate records which and goes on.
          const broken = error instanceof ApiError && error.status === 409 ? await brokenChainOf(api, sessionId) : undefined;
          if (broken === undefined) throw error;
          brokenAt[index] = broken;
          done++;
          progress.note(`[${done}/${ids.length}] ${sessionId}: BROKEN CHAIN ${truncate(brokenChainLine(broken), 160)}`);
          progress.update(status());
        } catch (failed) {
          if (failure === undefined) {
            failure = failed instanceof Error ? new GateError(`session ${sessionId}: ${failed.message}`) : new GateError(String(failed));
            controller.abort();
          }
        }
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(plan.concurrency, ids.length) }, worker));
  } finally {
    progress.stop();
  }
  if (failure) throw failure;

  const scored = results.flatMap((result, i) => (result === undefined ? [] : [{ sessionId: ids[i]!, result }]));
  const broken = brokenAt.filter((chain): chain is BrokenChain => chain !== undefined);
  // A session whose chain is broken got no verdict: it counts as not passed.
  const passed = scored.filter(({ result }) => result.passed).length;
  const v = verdict(passed, ids.length, plan.minPassRate);
  const rows = ids.map((sessionId, i) => {
    const result = results[i];
    const cells =
      result === undefined
        ? [truncate(sessionId, ID_WIDTH), '-', 'BROKEN', truncate(brokenChainLine(brokenAt[i]!), REASON_WIDTH)]
        : [truncate(sessionId, ID_WIDTH), formatScore(result.score), resultLabel(result.passed), truncate(reasonOf(result), REASON_WIDTH)];
    return { cells };
  });
  return finish(io, plan, ['session', 'score', 'result', 'reason'], rows, v, broken, () => ({
    mode: 'trace',
    passRate: v.passRate,
    passed: v.passed,
    total: v.total,
    minPassRate: v.minPassRate,
    evaluator: { id: plan.evaluatorId, name: evaluator.name, kind: evaluator.kind },
    sessions: scored.map(({ sessionId, result: r }) => ({
      sessionId,
      method: r.method,
      score: r.score,
      passed: r.passed,
      reasoning: r.reasoning ?? null,
      violations: r.violations,
    })),
  }));
}

// ---------------------------------------------------------------------------------------------
// Dataset mode

function checkRun(body: unknown, what: string): DatasetRun {
  const run = body as Partial<DatasetRun>;
  if (typeof run.id !== 'string' || typeof run.status !== 'string' || typeof run.totalCases !== 'number' || typeof run.passedCases !== 'number') {
    throw new ApiError(`${what} answered without a run (id, status, totalCases, passedCases)`);
  }
  return run as DatasetRun;
}

function caseFinished(c: RunCase): boolean {
  return typeof c.passed === 'boolean' || (typeof c.error === 'string' && c.error !== '');
}

function caseLabel(c: RunCase): string {
  return c.caseId ? `#${c.index} ${c.caseId}` : `#${c.index}`;
}

function caseRows(run: DatasetRun): Row[] {
  return [...(run.cases ?? [])]
    .sort((a, b) => a.index - b.index)
    .map((c) => ({
      cells: [
        truncate(caseLabel(c), ID_WIDTH),
        truncate(c.sessionId ?? '-', ID_WIDTH),
        formatScore(c.score),
        resultLabel(c.passed, c.error),
        truncate(c.error ?? c.reasoning ?? '', REASON_WIDTH),
      ],
    }));
}

const CASE_HEADERS = ['case', 'session', 'score', 'result', 'reason'];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function datasetMode(plan: DatasetPlan, io: Io): Promise<number> {
  const api = new ApiClient({ baseUrl: plan.url, apiKey: plan.apiKey, timeoutMs: plan.requestTimeoutMs });
  const startPath = `/api/datasets/${pathSegment(plan.datasetId)}/runs`;
  const started = Date.now();
  const deadline = started + plan.timeoutMs;
  const { body } = await api.post<unknown>(startPath, {
    agentId: plan.agentId,
    webhookUrl: plan.webhookUrl,
    ...(plan.evaluatorId !== undefined ? { evaluatorId: plan.evaluatorId } : {}),
    ...(plan.caseTimeoutSeconds !== undefined ? { caseTimeoutSeconds: plan.caseTimeoutSeconds } : {}),
  });
  let run = checkRun(body, `POST ${startPath}`);
  const progress = new Progress(io);
  progress.note(
    `Dataset run ${run.id} started: ${run.totalCases} case${run.totalCases === 1 ? '' : 's'} of dataset ${plan.datasetId} sent to ${plan.webhookUrl}`,
  );
  const status = (): string => {
    const completed = run.completedCases ?? (run.cases ?? []).filter(caseFinished).length;
    const elapsed = Math.round((Date.now() - started) / 1000);
    return `Dataset run ${run.id}: ${completed}/${run.totalCases} cases done (${run.passedCases} passed), ${elapsed}s of ${Math.round(plan.timeoutMs / 1000)}s …`;
  };
  const reported = new Set<number>();
  const report = (): void => {
    for (const c of [...(run.cases ?? [])].sort((a, b) => a.index - b.index)) {
      if (reported.has(c.index) || !caseFinished(c)) continue;
      reported.add(c.index);
      const detail = c.error ?? (c.passed ? '' : c.reasoning) ?? '';
      progress.note(
        `[${reported.size}/${run.totalCases}] case ${caseLabel(c)}${c.sessionId ? ` session ${c.sessionId}` : ''}: ${resultLabel(c.passed, c.error)}${typeof c.score === 'number' ? ` (score ${formatScore(c.score)})` : ''}${detail ? ` ${truncate(detail, 120)}` : ''}`,
      );
    }
    progress.update(status());
  };

  progress.start(status());
  let delay = POLL_FIRST_DELAY_MS;
  let failures = 0;
  const runPath = `/api/runs/${pathSegment(run.id)}`;
  try {
    for (;;) {
      report();
      if (run.status === 'completed') break;
      if (!ACTIVE_RUN_STATUSES.has(run.status)) {
        throw new GateError(`dataset run ${run.id} ended with status "${run.status}"${run.error ? `: ${run.error}` : ''}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const completed = run.completedCases ?? (run.cases ?? []).filter(caseFinished).length;
        const rows = caseRows(run);
        if (!plan.json && rows.length > 0)
          io.out(
            `\n${renderTable(
              CASE_HEADERS,
              rows.map((r) => r.cells),
            )}\n\n`,
          );
        throw new GateError(
          `dataset run ${run.id} did not complete within ${formatSeconds(plan.timeoutMs)} (--timeout-seconds): ${completed}/${run.totalCases} cases done, status "${run.status}"`,
        );
      }
      await sleep(Math.min(delay, left));
      delay = Math.min(delay * 2, POLL_MAX_DELAY_MS);
      try {
        // A poll never outlives the run's deadline by more than a second.
        const timeout = Math.max(1000, Math.min(plan.requestTimeoutMs, deadline - Date.now() + 1000));
        run = checkRun(await api.get<unknown>(runPath, timeout), `GET ${runPath}`);
        failures = 0;
      } catch (error) {
        if (!(error instanceof ApiError) || !error.transient || ++failures > POLL_MAX_FAILURES) throw error;
        progress.note(`poll ${failures}/${POLL_MAX_FAILURES} of run ${run.id} failed, retrying: ${error.message}`);
      }
    }
  } finally {
    progress.stop();
  }

  if (run.totalCases <= 0) throw new GateError(`dataset ${plan.datasetId} has no cases: nothing was evaluated, so no pass rate (exit 2)`);
  // The sessions the agent logged are verified as stored now: a case passed on a broken chain proves nothing.
  const broken: BrokenChain[] = [];
  const sessionIds = [...new Set((run.cases ?? []).flatMap((c) => (typeof c.sessionId === 'string' && c.sessionId !== '' ? [c.sessionId] : [])))];
  for (const sessionId of sessionIds) {
    try {
      const chain = await brokenChainOf(api, sessionId);
      if (chain !== undefined) broken.push(chain);
    } catch (error) {
      // A case may name a session that was never logged (its case failed for that): nothing to verify.
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
  }
  const v = verdict(Math.min(run.passedCases, run.totalCases), run.totalCases, plan.minPassRate);
  return finish(io, plan, CASE_HEADERS, caseRows(run), v, broken, () => ({
    mode: 'dataset',
    passRate: v.passRate,
    passed: v.passed,
    total: v.total,
    minPassRate: v.minPassRate,
    run: {
      id: run.id,
      status: run.status,
      datasetId: plan.datasetId,
      agentId: plan.agentId,
      totalCases: run.totalCases,
      completedCases: run.completedCases,
      passedCases: run.passedCases,
      failedCases: run.failedCases,
    },
    cases: [...(run.cases ?? [])].sort((a, b) => a.index - b.index),
  }));
}

// ---------------------------------------------------------------------------------------------
// Entry points

/** Runs a resolved plan; never throws: every failure becomes a message and exit code 2. */
export async function runEvalGate(plan: GatePlan, io: Io): Promise<number> {
  try {
    return plan.mode === 'trace' ? await traceMode(plan, io) : await datasetMode(plan, io);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    io.err(`vigil eval-gate: ${message}\n`);
    if (plan.json) io.out(`${JSON.stringify({ result: 'error', error: message }, null, 2)}\n`);
    return EXIT_ERROR;
  }
}

const HELP_AFTER = `
Modes:
  trace scoring   --evaluator-id <id> with --session-ids a,b,c or --agent-id <id> [--limit <n>]
                  scores each session with the saved evaluator (compliance or llm_judge)
  dataset run     --dataset-id <id> --agent-id <id> --webhook-url <url> [--evaluator-id <id>]
                  the server sends each case to the agent webhook and scores the session it logs

Environment:
  VIGIL_URL       server address when --url is not given (default ${DEFAULT_URL})
  VIGIL_API_KEY   observe API key, sent as a bearer token (there is deliberately no flag for it)
  CI=true         plain log lines instead of a live progress line

Exit codes:
  0  pass rate >= --min-pass-rate and every session's hash chain verifies
  1  pass rate below --min-pass-rate, or a session's hash chain is broken (tampered events)
  2  usage error, connection or HTTP error, dataset run timed out or failed, nothing to evaluate

Examples:
  VIGIL_API_KEY=vgl_... vigil eval-gate --evaluator-id ev_1 --agent-id support-bot --limit 50 --min-pass-rate 0.9
  VIGIL_API_KEY=vgl_... vigil eval-gate --dataset-id ds_1 --agent-id support-bot \\
      --webhook-url http://localhost:8080/run --min-pass-rate 0.8 --timeout-seconds 600
`;

export function registerEvalGate(program: Command): void {
  program
    .command('eval-gate')
    .description('exit non-zero when the evaluation pass rate is below --min-pass-rate (for CI)')
    .option('--url <url>', `observe server address (env VIGIL_URL, default ${DEFAULT_URL})`)
    .option('--evaluator-id <id>', 'saved evaluator (required for trace scoring; optional in dataset mode)')
    .option('--session-ids <ids>', 'trace scoring: comma-separated session ids')
    .option('--agent-id <id>', "trace scoring: the agent's newest sessions; dataset mode: the agent under test")
    .option('--limit <n>', `trace scoring with --agent-id: how many of the newest sessions (1-${MAX_LIMIT}, default ${DEFAULT_LIMIT})`)
    .option('--dataset-id <id>', 'dataset mode: the dataset whose cases are run')
    .option('--webhook-url <url>', 'dataset mode: agent webhook the server posts each case to')
    .option('--timeout-seconds <s>', `dataset mode: give up (exit 2) when the run has not completed by then (default ${DEFAULT_TIMEOUT_SECONDS})`)
    .option('--case-timeout-seconds <s>', `dataset mode: how long the server waits for the webhook per case (1-${MAX_CASE_TIMEOUT_SECONDS}, server default 30)`)
    .option('--min-pass-rate <rate>', 'required: lowest passing fraction, 0 to 1 (inclusive: a rate equal to it passes)')
    .option('--concurrency <n>', `trace scoring: sessions scored at once (1-${MAX_CONCURRENCY}, default ${DEFAULT_CONCURRENCY})`)
    .option('--request-timeout-seconds <s>', `timeout of each HTTP request (default ${DEFAULT_REQUEST_TIMEOUT_SECONDS})`)
    .option('--json', 'print the result as one JSON document on stdout instead of the table')
    .addHelpText('after', HELP_AFTER)
    .exitOverride((error: CommanderError) => {
      // Commander's own errors (unknown option, missing value) are usage errors: exit 2, as ours are.
      if (error.exitCode === 0) process.exit(0);
      if (error.code === 'commander.unknownOption' && /--api-key/.test(error.message)) {
        process.stderr.write('the API key is read only from the VIGIL_API_KEY environment variable, never from a flag\n');
      }
      process.exit(EXIT_ERROR);
    })
    .action(async (options: RawGateOptions) => {
      let plan: GatePlan;
      try {
        plan = resolveGateOptions(options, process.env);
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        process.stderr.write(`error: ${error.message}\n(see vigil eval-gate --help)\n`);
        process.exitCode = EXIT_ERROR;
        return;
      }
      const io: Io = {
        out: (text) => process.stdout.write(text),
        err: (text) => process.stderr.write(text),
        live: liveProgressWanted(process.stderr.isTTY, process.env),
      };
      process.exitCode = await runEvalGate(plan, io);
    });
}
