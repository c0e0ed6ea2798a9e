/**
 * The gate behind a framework's tool-approval hook, shared by `@vigil/sdk/ai-approval` and
 * `@vigil/sdk/mastra`. The hook asks (askApproval) and maps the gate's answer to the framework's
 * approved / denied / ask-the-user; the tool's execute runs the call only through runApproved, with
 * the arguments actually executed, so whatever the framework did between the two (a resumed run,
 * edited messages) cannot run a call the gate did not approve. Fails closed: an unreachable gate,
 * a deny, an expiry or a refused receipt means the tool does not run, with a reason to show.
 */
import type { SessionChoice } from './ambient.ts';
import { ApprovalDeniedError, ApprovalTimeoutError, VigilError } from './errors.ts';
import type { ApprovalOutcome, GateClient, NewApprovalRequest, WaitOptions } from './gate.ts';
import { askApproval, recordDecision, runApproved } from './tools.ts';

export interface ToolGateOptions {
  /** The gate client (its key needs request:create and request:read). */
  gate: GateClient;
  /** The gate action a tool's calls are requested under (default: the tool's name). */
  actions?: Record<string, string>;
  /** The session to record in (default: the ambient one). */
  session?: SessionChoice;
  urgency?: NewApprovalRequest['urgency'];
  /** Extra context for the approver (the session and agent ids are added). */
  context?: Record<string, unknown>;
  /** How long a request may wait for a human before the gate expires it (default: no expiry). */
  expiresInMs?: number;
  /**
   * How long the approval hook waits for a human before it hands the call to the framework's own
   * approval flow (ask the user). The decision still comes from the gate.
   */
  askAfterMs?: number;
  /** How long and how often to wait for a human decision before the tool runs (GateClient.waitForDecision). */
  wait?: WaitOptions;
}

/** What the gate said about a call, in the terms of a framework's approval hook. */
export type GateVerdict = { kind: 'approved'; reason: string } | { kind: 'denied'; reason: string } | { kind: 'ask'; requestId: string; reason: string };

/** A tool call the gate did not allow (or could not be asked about): the tool did not run. */
export class ToolNotApprovedError extends VigilError {
  constructor(
    readonly toolName: string,
    readonly requestId: string | undefined,
    reason: string,
    cause?: unknown,
  ) {
    super(`Vigil: tool "${toolName}" was not run: ${reason}`, { cause });
  }
}

interface Asked {
  toolName: string;
  action: string;
  params: Record<string, unknown>;
  /** The decided request, once decided. */
  outcome?: ApprovalOutcome;
  /** The request, when it was handed to the framework's approval flow undecided. */
  requestId?: string;
  /** Why the gate could not be asked (the call must not run). */
  failure?: string;
  /** Settles when the gate has answered (or could not be asked). */
  asking?: Promise<void>;
}

function describeFailure(error: unknown): string {
  return `the Vigil gate could not be asked (${error instanceof Error ? error.message : String(error)})`;
}

function outcomeReason(outcome: ApprovalOutcome): string {
  return `Vigil approval request ${outcome.id} was ${outcome.status} by ${outcome.decidedBy ?? 'system'}${outcome.decisionReason ? `: ${outcome.decisionReason}` : ''}`;
}

function decisionReason(outcome: ApprovalOutcome): string {
  return new ApprovalDeniedError(outcome).message.replace(/^Approval/, 'approval');
}

/** Canonical text of a tool's arguments (keys sorted): calls of one tool told apart by what they do. */
export function argumentsKey(toolName: string, input: unknown): string {
  const sorted = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sorted)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
          )
        : value;
  return `${toolName}\u0000${JSON.stringify(sorted(input) ?? null)}`;
}

function asParams(input: unknown): Record<string, unknown> {
  return input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : { input };
}

/** The asked calls of one agent, by the framework's key for a call (its tool-call id, or its arguments). */
export class ToolGate {
  private readonly asked = new Map<string, Asked>();

  constructor(private readonly options: ToolGateOptions) {}

  private action(toolName: string): string {
    return this.options.actions?.[toolName] ?? toolName;
  }

  /** Asks the gate about a call (the framework's approval hook): approved, denied, or ask the user (pending past askAfterMs). */
  async decide(key: string, toolName: string, input: unknown): Promise<GateVerdict> {
    const known = this.asked.get(key);
    if (known) {
      // A framework may ask again when it resumes the call (ai 6 does): the gate is asked once.
      await known.asking;
      return this.verdict(known);
    }
    const { gate, session, urgency, context, expiresInMs, wait } = this.options;
    const entry: Asked = { toolName, action: this.action(toolName), params: asParams(input) };
    this.asked.set(key, entry);
    entry.asking = askApproval(gate, entry.action, entry.params, {
      session,
      urgency,
      context,
      ...(expiresInMs !== undefined && { expiresAt: new Date(Date.now() + expiresInMs).toISOString() }),
      wait: { ...wait, timeoutMs: this.options.askAfterMs ?? wait?.timeoutMs },
      // Approved at once, the call runs through run() with this gate client, in this process.
      redeemOnIssue: true,
    }).then(
      (outcome) => {
        entry.outcome = outcome;
      },
      (error: unknown) => {
        if (error instanceof ApprovalTimeoutError) entry.requestId = error.requestId;
        else entry.failure = describeFailure(error);
      },
    );
    await entry.asking;
    return this.verdict(entry);
  }

  private verdict(entry: Asked): GateVerdict {
    if (entry.failure !== undefined) return { kind: 'denied', reason: entry.failure };
    // Handed to the framework's approval flow, the call stays there even once the gate decided: ai 6
    // asks again when the run resumes, and a call that no longer needs approval counts as denied.
    if (entry.requestId !== undefined)
      return { kind: 'ask', requestId: entry.requestId, reason: `Vigil approval request ${entry.requestId} is waiting for a decision` };
    const outcome = entry.outcome!;
    return outcome.approved
      ? { kind: 'approved', reason: `Vigil approval request ${outcome.id} was approved by ${outcome.decidedBy ?? 'policy'}` }
      : { kind: 'denied', reason: decisionReason(outcome) };
  }

  /** The decision on a call handed to the framework's approval flow: waits for it on the gate and records it once. */
  async decision(key: string): Promise<ApprovalOutcome | undefined> {
    const entry = this.asked.get(key);
    if (entry?.requestId === undefined || entry.outcome) return entry?.outcome;
    entry.outcome = await this.options.gate.waitForDecision(entry.requestId, this.options.wait);
    recordDecision(entry.outcome, this.options.session);
    return entry.outcome;
  }

  /**
   * The gate's answer for a call handed to the framework's approval flow, to pass on to it: waits
   * for the decision; no decision to be had (timeout, gate unreachable) refuses the call, with why.
   * Undefined when the call was not asked about.
   */
  async answer(key: string): Promise<{ approved: boolean; reason: string } | undefined> {
    try {
      const outcome = await this.decision(key);
      return outcome && { approved: outcome.approved, reason: outcomeReason(outcome) };
    } catch (error) {
      return { approved: false, reason: `no Vigil decision: ${error instanceof Error ? error.message : String(error)}` };
    }
  }

  /** Drops a call the framework will not run (it was denied before execution): nothing is kept for it. */
  forget(key: string): void {
    this.asked.delete(key);
  }

  /** The asked call under `key`, else (for keys by arguments) the oldest asked call of that tool. */
  private take(key: string, toolName: string): Asked | undefined {
    let found = this.asked.has(key) ? key : undefined;
    if (found === undefined && key.startsWith(`${toolName}\u0000`)) {
      found = [...this.asked].find(([candidate, entry]) => entry.toolName === toolName && candidate.startsWith(`${toolName}\u0000`))?.[0];
    }
    if (found === undefined) return undefined;
    const entry = this.asked.get(found)!;
    this.asked.delete(found);
    return entry;
  }

  /**
   * Runs a call (the tool's execute) only when the gate approved it for exactly these arguments:
   * a call never asked about is asked now; a call handed to the user waits for the gate's decision.
   * Throws ToolNotApprovedError (fn not run) otherwise; fn's own error is rethrown as it is.
   */
  async run<R>(key: string, toolName: string, input: unknown, fn: () => R | Promise<R>): Promise<Awaited<R>> {
    let entry = this.take(key, toolName);
    if (!entry) {
      await this.decide(key, toolName, input);
      entry = this.take(key, toolName)!;
    }
    await entry.asking;
    if (entry.failure !== undefined) throw new ToolNotApprovedError(toolName, undefined, entry.failure);
    let outcome = entry.outcome;
    if (!outcome) {
      try {
        outcome = await this.options.gate.waitForDecision(entry.requestId!, this.options.wait);
      } catch (error) {
        const reason = error instanceof ApprovalTimeoutError ? error.message.replace(/^No/, 'no') : describeFailure(error);
        throw new ToolNotApprovedError(toolName, entry.requestId, reason, error);
      }
      recordDecision(outcome, this.options.session);
    }
    if (!outcome.approved) throw new ToolNotApprovedError(toolName, outcome.id, decisionReason(outcome));
    let ran = false;
    try {
      return await runApproved(
        this.options.gate,
        outcome,
        entry.action,
        asParams(input),
        () => {
          ran = true;
          return fn();
        },
        { session: this.options.session, toolName },
      );
    } catch (error) {
      if (ran) throw error;
      throw new ToolNotApprovedError(toolName, outcome.id, error instanceof Error ? error.message : String(error), error);
    }
  }
}
