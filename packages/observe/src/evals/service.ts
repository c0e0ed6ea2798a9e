import { newId } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { chainBrokenError, observeError } from '../errors.ts';
import { EMPTY_HEAD, SERVER_WRITER, type ChainHead, type AppendedEvent, type EventWriter } from '../events/index.ts';
import { roundUsd, type ModelPrice } from '@vigil/pricing';
import type { SessionRow } from '../events/index.ts';
import { chainHeadOf, verifySessionChain } from '../sessions/index.ts';
import { callJudge, JudgeError, judgeSettings, judgeUserPrompt, type JudgeProvider, type Usage } from './judge.ts';
import { evaluateRules } from './rules.ts';
import {
  DEFAULT_JUDGE_PASS_THRESHOLD,
  type BreachBody,
  type ComplianceBody,
  type ComplianceResult,
  type ComplianceRule,
  type EvaluatorKind,
  type JudgeResult,
  type ScoreBody,
} from './schemas.ts';
import { findEvaluator, insertJudgeCall, sessionFacts, setJudgeCallEvent, transcriptPage, type Evaluator } from './store.ts';
import { TranscriptBuilder } from './transcript.ts';

/**
 * Compliance evaluations: a verdict is computed from the session as it stands (every event up to
 * its current head, `throughSeq` in the payload) and appended to the same session's chain as an
 * `eval_result` through the one write path. Passed verdicts are severity `info`, failed ones
 * `warn` (never an error event, so a verdict does not change the session's error count). A verdict
 * is only appended to a chain that verifies over every stored event (409 chain_broken otherwise).
 */

const TRANSCRIPT_PAGE = 500;

// ---------------------------------------------------------------------------------------------
// Evaluators as the source of a definition
// ---------------------------------------------------------------------------------------------

/** The saved evaluator a body names; 400 when there is none or it is of the other kind. */
export async function resolveEvaluator(ctx: ObserveContext, id: string, kind: EvaluatorKind): Promise<Evaluator> {
  const evaluator = await findEvaluator(ctx.database, id);
  if (!evaluator) {
    throw observeError('validation', `Validation failed in body: evaluatorId: no evaluator ${JSON.stringify(id)}`, [
      { path: 'evaluatorId', message: `no evaluator ${JSON.stringify(id)}` },
    ]);
  }
  if (evaluator.kind !== kind) {
    const message = `evaluator ${JSON.stringify(id)} is of kind ${evaluator.kind}, not ${kind}`;
    throw observeError('validation', `Validation failed in body: evaluatorId: ${message}`, [{ path: 'evaluatorId', message }]);
  }
  return evaluator;
}

export interface ComplianceSpec {
  rules: ComplianceRule[];
  passThreshold: number | null;
  evaluatorId: string | null;
}

export interface JudgeSpec {
  rubric: string;
  /** null: the configured default model. */
  model: string | null;
  passThreshold: number | null;
  evaluatorId: string | null;
}

export function complianceSpecOf(evaluator: Evaluator): ComplianceSpec {
  return { rules: evaluator.rules ?? [], passThreshold: evaluator.passThreshold, evaluatorId: evaluator.id };
}

export function judgeSpecOf(evaluator: Evaluator): JudgeSpec {
  return { rubric: evaluator.rubric ?? '', model: evaluator.model, passThreshold: evaluator.passThreshold, evaluatorId: evaluator.id };
}

export async function complianceSpec(ctx: ObserveContext, body: ComplianceBody): Promise<ComplianceSpec> {
  if (body.evaluatorId !== undefined) return complianceSpecOf(await resolveEvaluator(ctx, body.evaluatorId, 'compliance'));
  return { rules: body.rules!, passThreshold: body.passThreshold ?? null, evaluatorId: null };
}

export async function judgeSpec(ctx: ObserveContext, body: ScoreBody): Promise<JudgeSpec> {
  if (body.evaluatorId !== undefined) return judgeSpecOf(await resolveEvaluator(ctx, body.evaluatorId, 'llm_judge'));
  return { rubric: body.rubric!, model: body.model ?? null, passThreshold: body.passThreshold ?? null, evaluatorId: null };
}

// ---------------------------------------------------------------------------------------------
// Appending a verdict
// ---------------------------------------------------------------------------------------------

/**
 * The session's row, its chain verified over every stored event now (undefined: no such session).
 * A verdict is never appended to a chain that does not verify: 409 chain_broken names the break.
 */
async function verifiedSession(ctx: ObserveContext, sessionId: string): Promise<SessionRow | undefined> {
  const chain = await verifySessionChain(ctx, sessionId);
  if (!chain) return undefined;
  if (chain.verdict.brokenAt !== null) throw chainBrokenError(sessionId, chain.verdict.brokenAt);
  return chain.session;
}

async function requireVerifiedSession(ctx: ObserveContext, sessionId: string): Promise<SessionRow> {
  const session = await verifiedSession(ctx, sessionId);
  if (!session) throw observeError('sessionNotFound');
  return session;
}

/**
 * Appends a verdict onto the head its session's chain was verified at (`verifiedHead`); events
 * appended since are verified under the session lock before the verdict is chained after them.
 */
async function appendVerdict(
  ctx: ObserveContext,
  sessionId: string,
  agentId: string,
  verifiedHead: ChainHead,
  passed: boolean,
  payload: Record<string, unknown>,
  writtenBy: EventWriter = SERVER_WRITER,
): Promise<AppendedEvent> {
  const [event] = await ctx.events.append([{ sessionId, agentId, eventType: 'eval_result', severity: passed ? 'info' : 'warn', payload }], ctx.clock.now(), {
    writtenBy,
    verifiedHead,
  });
  return event!;
}

const chained = (event: AppendedEvent) => ({ id: event.id, hash: event.hash, prevHash: event.prevHash });

// ---------------------------------------------------------------------------------------------
// Deterministic rules
// ---------------------------------------------------------------------------------------------

export async function evaluateCompliance(ctx: ObserveContext, sessionId: string, spec: ComplianceSpec): Promise<ComplianceResult> {
  const session = await requireVerifiedSession(ctx, sessionId);
  const throughSeq = session.last_seq;
  const facts = await sessionFacts(ctx.database.db, session);
  const verdict = evaluateRules(spec.rules, facts, spec.passThreshold);
  // What the answer says of the verdict; the appended event records it with the rules that reached it.
  const outcome = {
    method: 'deterministic' as const,
    score: verdict.score,
    passed: verdict.passed,
    reasoning: verdict.reasoning,
    violations: verdict.violations,
    rulesEvaluated: verdict.rulesEvaluated,
  };
  const payload: Record<string, unknown> = { ...outcome, rules: spec.rules, passThreshold: spec.passThreshold, throughSeq };
  if (spec.evaluatorId !== null) payload.evaluatorId = spec.evaluatorId;
  const event = await appendVerdict(ctx, sessionId, session.agent_id, chainHeadOf(session), verdict.passed, payload);
  return { sessionId, ...outcome, event: chained(event) };
}

// ---------------------------------------------------------------------------------------------
// LLM judge
// ---------------------------------------------------------------------------------------------

/** The price of a judge model: the configured provider's entry first, then any provider's (an OpenAI-compatible server may serve another vendor's model). */
export function judgeModelPrice(ctx: ObserveContext, provider: JudgeProvider, model: string): ModelPrice | undefined {
  return ctx.prices.find(model, provider) ?? ctx.prices.find(model);
}

const costOf = (price: ModelPrice, usage: Usage): number =>
  roundUsd((usage.inputTokens * price.inputPerMillionUsd + usage.outputTokens * price.outputPerMillionUsd) / 1_000_000);

/** Checks that the judge can run with this spec (503 unconfigured, 400 unpriced) before any work. */
export function judgePlan(ctx: ObserveContext, spec: JudgeSpec) {
  const settings = judgeSettings(ctx.config);
  if (!settings) throw observeError('judgeNotConfigured');
  const model = spec.model ?? settings.model;
  const price = judgeModelPrice(ctx, settings.provider, model);
  if (!price) {
    throw observeError(
      'judgeModelUnpriced',
      `The judge model ${JSON.stringify(model)} has no price in the price table; use a priced model or add it with MODEL_PRICES`,
    );
  }
  return { settings, model, price };
}

export async function evaluateWithJudge(ctx: ObserveContext, sessionId: string, spec: JudgeSpec): Promise<JudgeResult> {
  const { settings, model, price } = judgePlan(ctx, spec);
  // Verified before the paid call, and again before the verdict is appended (the call takes seconds).
  const session = await requireVerifiedSession(ctx, sessionId);
  const throughSeq = session.last_seq;

  const builder = new TranscriptBuilder();
  for (let after = -1; ;) {
    const page = await ctx.sealer.open(await transcriptPage(ctx.database.db, sessionId, after, throughSeq, TRANSCRIPT_PAGE));
    for (const event of page) builder.add(event);
    if (page.length < TRANSCRIPT_PAGE) break;
    after = page[page.length - 1]!.seq;
  }
  const transcript = builder.finish();

  // The provider call: outside any transaction, bounded by LLM_TIMEOUT_MS per attempt.
  let answer;
  try {
    answer = await callJudge(settings, model, judgeUserPrompt(spec.rubric, transcript.text, transcript.omitted));
  } catch (error) {
    if (!(error instanceof JudgeError)) throw error;
    if (error.usage) {
      // Billed but unusable: the money was spent all the same.
      await insertJudgeCall(ctx.database, {
        id: newId(),
        session_id: sessionId,
        evaluator_id: spec.evaluatorId,
        model,
        input_tokens: error.usage.inputTokens,
        output_tokens: error.usage.outputTokens,
        cost_usd: costOf(price, error.usage),
        score: null,
        passed: null,
        event_id: null,
        error: error.message,
        created_at: ctx.clock.now(),
      });
    }
    throw observeError('judgeFailed', `The judge model did not answer with a valid verdict: ${error.message}`);
  }

  const { verdict, usage } = answer;
  const threshold = spec.passThreshold ?? DEFAULT_JUDGE_PASS_THRESHOLD;
  const passed = verdict.score >= threshold;
  const costUsd = costOf(price, usage);
  const tokenCount = usage.inputTokens + usage.outputTokens;
  const callId = newId();
  await insertJudgeCall(ctx.database, {
    id: callId,
    session_id: sessionId,
    evaluator_id: spec.evaluatorId,
    model,
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cost_usd: costUsd,
    score: verdict.score,
    passed: passed ? 1 : 0,
    event_id: null,
    error: null,
    created_at: ctx.clock.now(),
  });

  // What the answer says of the verdict; the appended event records it with how it was reached.
  const outcome = { method: 'llm_judge' as const, score: verdict.score, passed, reasoning: verdict.reasoning, judgeModel: model, costUsd, tokenCount };
  const payload: Record<string, unknown> = {
    ...outcome,
    rubric: spec.rubric,
    passThreshold: threshold,
    throughSeq,
    transcriptEventsOmitted: transcript.omitted,
  };
  if (spec.evaluatorId !== null) payload.evaluatorId = spec.evaluatorId;
  const current = await requireVerifiedSession(ctx, sessionId);
  const event = await appendVerdict(ctx, sessionId, session.agent_id, chainHeadOf(current), passed, payload);
  await setJudgeCallEvent(ctx.database, callId, event.id);
  return { sessionId, ...outcome, event: chained(event) };
}

// ---------------------------------------------------------------------------------------------
// Guardrail breaches reported by the approval service
// ---------------------------------------------------------------------------------------------

/** Default ruleType of a breach that names none. */
export const BREACH_RULE_TYPE = 'guardrail_breach';

/**
 * A denied action reported by another service: a deterministic verdict (score 0, failed) with the
 * breach as its one violation, appended to the breaching session (created when missing, agent
 * `agentId`); refused like any verdict when that session's chain is broken.
 */
export async function recordBreach(ctx: ObserveContext, body: BreachBody): Promise<{ eventId: string }> {
  const { breach } = body;
  const ruleType = breach.ruleType ?? BREACH_RULE_TYPE;
  const what = breach.tool === undefined ? 'an action' : `tool ${breach.tool}`;
  const detail = `${breach.source} denied ${what}${breach.reason === undefined ? '' : `: ${breach.reason}`}`;
  const payload = {
    method: 'deterministic',
    score: 0,
    passed: false,
    reasoning: `Guardrail breach reported by ${breach.source}: rule ${breach.ruleId} denied ${what}${breach.reason === undefined ? '' : ` (${breach.reason})`}.`,
    violations: [{ ruleId: breach.ruleId, ruleType, detail }],
    rulesEvaluated: 1,
    breach: { ...breach },
  };
  const session = await verifiedSession(ctx, body.sessionId);
  const event = await appendVerdict(ctx, body.sessionId, body.agentId, session ? chainHeadOf(session) : EMPTY_HEAD, false, payload, 'service_token');
  return { eventId: event.id };
}
