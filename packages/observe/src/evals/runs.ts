import { BackgroundDrain, canonicalJson, fetchWithTimeout, ServiceError } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { ObserveContext } from '../context.ts';
import { findSession } from '../sessions/index.ts';
import { RETRY_AFTER_MAX_MS } from './judge.ts';
import { webhookAnswerSchema } from './schemas.ts';
import { complianceSpecOf, evaluateCompliance, evaluateWithJudge, judgeSpecOf } from './service.ts';
import { claimCase, dueCases, loadClaimedCase, recordCaseOutcome, type CaseOutcome, type ClaimedCase, type Evaluator } from './store.ts';

/**
 * Dataset runs, worked off the request path from durable state. POST /api/datasets/:id/runs
 * commits the run and one pending row per case, then kicks this worker; the `observe.eval-runs`
 * job (every EVAL_RUNS_INTERVAL_MS, one instance at a time) picks up whatever is still pending, so
 * a restart resumes unfinished cases. A case is claimed (claimed_until) before its webhook is
 * called, so two workers never work the same case at once; a claim left by a crashed process runs
 * out and the case is taken again, at most MAX_CASE_ATTEMPTS times.
 */

export const EVAL_RUNS_INTERVAL_MS = 5000;
/** Cases of all runs worked at the same time by one process. */
export const CASE_CONCURRENCY = 4;
/** Claims of a process that died; after this many the case fails instead of calling the webhook again. */
export const MAX_CASE_ATTEMPTS = 3;
const CLAIM_BATCH = 50;
const CLAIM_SLACK_MS = 30_000;
/** Webhook answers longer than this are refused (the answer only carries a session id and an output). */
const MAX_ANSWER_BYTES = 1_000_000;

function describeFailure(error: unknown, timeoutMs: number): string {
  if ((error as Error).name === 'TimeoutError') return `the webhook did not answer within ${timeoutMs / 1000} s`;
  return `the webhook request failed: ${(error as Error).message}`;
}

/** A webhook call cut short by shutdown: the case keeps its claim and is taken again once it runs out. */
class ShutdownAbort extends Error {
  override name = 'ShutdownAbort';
}

export class EvalRunWorker {
  private stopped = false;
  private readonly background = new BackgroundDrain(
    () => this.drain(),
    (error) => this.log.error({ err: error }, 'evaluation run drain failed'),
  );
  /** Aborts webhook calls in flight on stop, so shutdown does not wait out a case timeout. */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly ctx: ObserveContext,
    private readonly log: FastifyBaseLogger,
    /** Whether a new run starts a drain at once (otherwise only the periodic job works cases). */
    private readonly kickEnabled: boolean,
  ) {}

  /** After a run was committed: drain in the background (or ask the running drain to go again). Never awaited. */
  kick(): void {
    if (this.kickEnabled) this.background.kick();
  }

  /** One tick of the periodic job: whatever is due, including cases whose claim ran out. */
  async runJob(): Promise<void> {
    await this.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.shutdown.abort();
    await this.background.stop();
  }

  /** Claims and works due cases, CASE_CONCURRENCY at a time, until none is due. Returns cases worked. */
  async drain(): Promise<number> {
    let worked = 0;
    while (!this.stopped) {
      const now = this.ctx.clock.now();
      const due = await dueCases(this.ctx.database.db, now, CLAIM_BATCH);
      if (due.length === 0) break;
      let next = 0;
      let progressed = 0;
      const lane = async (): Promise<void> => {
        while (next < due.length && !this.stopped) {
          const { run_id, position } = due[next++]!;
          if (await this.claimAndWork(run_id, position)) progressed += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(CASE_CONCURRENCY, due.length) }, lane));
      worked += progressed;
      // Everything due was taken by other workers meanwhile: leave it to them.
      if (progressed === 0) break;
    }
    return worked;
  }

  private claimMs(run: { case_timeout_ms: number }): number {
    // Long enough for the webhook and two judge attempts; a claim only runs out when its holder died.
    return run.case_timeout_ms + 2 * this.ctx.config.judge.timeoutMs + RETRY_AFTER_MAX_MS + CLAIM_SLACK_MS;
  }

  private async claimAndWork(runId: string, position: number): Promise<boolean> {
    const { db } = this.ctx.database;
    try {
      const now = this.ctx.clock.now();
      const claimed = await loadClaimedCase(db, runId, position);
      if (!claimed) return false;
      if (!(await claimCase(db, runId, position, now, now + this.claimMs(claimed.run)))) return false;
      const attempts = claimed.runCase.attempts + 1;
      const outcome =
        attempts > MAX_CASE_ATTEMPTS
          ? {
              sessionId: claimed.runCase.session_id,
              passed: false,
              score: null,
              error: `gave up after ${MAX_CASE_ATTEMPTS} interrupted attempts`,
              output: null,
              reasoning: null,
            }
          : await this.work(claimed);
      await recordCaseOutcome(this.ctx.database, runId, position, outcome, this.ctx.clock.now());
      return true;
    } catch (error) {
      // The claim runs out and the case is taken again (shutdown, a database outage, a crash of this code).
      if (error instanceof ShutdownAbort) this.log.info({ run: runId, position }, 'evaluation case interrupted by shutdown; it will be resumed');
      else this.log.error({ err: error, run: runId, position }, 'evaluation case failed; it will be retried');
      return false;
    }
  }

  /** Calls the agent webhook and scores the session it answers with. Never throws for the case's own failures. */
  private async work({ run, datasetCase }: ClaimedCase): Promise<CaseOutcome> {
    let output: string | null = null;
    const failed = (error: string, sessionId: string | null = null): CaseOutcome => ({ sessionId, passed: false, score: null, error, output, reasoning: null });
    const body = `{"runId":${JSON.stringify(run.id)},"caseId":${JSON.stringify(datasetCase.id)},"datasetId":${JSON.stringify(run.dataset_id)},"agentId":${JSON.stringify(run.agent_id)},"input":${datasetCase.input}}`;
    let answerText: string;
    try {
      const response = await fetchWithTimeout(run.webhook_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-vigil-run-id': run.id, 'x-vigil-case-id': datasetCase.id },
        body,
        timeoutMs: run.case_timeout_ms,
        signal: this.shutdown.signal,
      });
      answerText = await response.text();
      if (!response.ok) return failed(`the webhook answered HTTP ${response.status}`);
    } catch (error) {
      if (this.shutdown.signal.aborted) throw new ShutdownAbort('stopped');
      return failed(describeFailure(error, run.case_timeout_ms));
    }
    if (Buffer.byteLength(answerText) > MAX_ANSWER_BYTES) return failed(`the webhook answer exceeds ${MAX_ANSWER_BYTES} bytes`);
    let answerJson: unknown;
    try {
      answerJson = JSON.parse(answerText);
    } catch {
      return failed('the webhook answer is not JSON');
    }
    const answer = webhookAnswerSchema.safeParse(answerJson);
    if (!answer.success) return failed('the webhook answer is not {sessionId, output?} with a sessionId of 1 to 256 characters');
    const { sessionId } = answer.data;
    // What the agent answered, kept for the run's view of the case (actual beside expected).
    if (answer.data.output !== undefined) output = canonicalJson(answer.data.output);

    const session = await findSession(this.ctx.database, sessionId);
    if (!session) return failed(`session ${JSON.stringify(sessionId)} was not logged to observe`, sessionId);

    const evaluator = run.evaluator === null ? null : (JSON.parse(run.evaluator) as Evaluator);
    if (evaluator !== null) {
      try {
        const result =
          evaluator.kind === 'compliance'
            ? await evaluateCompliance(this.ctx, sessionId, complianceSpecOf(evaluator))
            : await evaluateWithJudge(this.ctx, sessionId, judgeSpecOf(evaluator));
        return { sessionId, passed: result.passed, score: result.score, error: null, output, reasoning: result.reasoning };
      } catch (error) {
        if (error instanceof ServiceError) return failed(`scoring failed: ${error.message}`, sessionId);
        throw error;
      }
    }

    // Without an evaluator: the session exists, has no error event, and the output is the expected one.
    if (session.error_count > 0) return failed(`the session has ${session.error_count} error event${session.error_count === 1 ? '' : 's'}`, sessionId);
    if (datasetCase.expected !== null) {
      if (answer.data.output === undefined) return failed('the webhook answer has no output to compare with expected', sessionId);
      if (output !== datasetCase.expected) return failed('the output does not equal expected', sessionId);
    }
    return { sessionId, passed: true, score: null, error: null, output, reasoning: null };
  }
}
