/**
 * What the framework adapters (openai-agents.ts, langgraph.ts) share: the gate asked without
 * waiting for a human (the framework suspends the run instead), the call run only through
 * runApproved with the arguments actually executed, and refusals worded for the agent.
 */
import type { SessionChoice } from './ambient.ts';
import { ApprovalTimeoutError } from './errors.ts';
import type { ApprovalOutcome, GateClient, NewApprovalRequest, WaitOptions } from './gate.ts';
import { askApproval, runApproved } from './tools.ts';

export interface GateApprovalsOptions {
  /** The gate to ask (a key with request:create and request:read). */
  gate: GateClient;
  /** The session that records the requests, decisions and calls (default: the ambient one). */
  session?: SessionChoice;
  urgency?: NewApprovalRequest['urgency'];
  /** Extra context for the approver, on every request. */
  context?: Record<string, unknown>;
  /** A request not decided within this long expires (the call is then refused). */
  expiresInMs?: number;
  /** How long and how often to wait for a human's decision when the run is resumed. */
  wait?: WaitOptions;
  /** Tell the gate an approved call ran, with its outcome (default true). */
  confirm?: boolean;
}

/** The gate's answer to a call, before it runs: decided (by a policy, or a human), pending, or not obtained. */
export type Asked = { kind: 'decided'; outcome: ApprovalOutcome } | { kind: 'pending'; requestId: string } | { kind: 'refused'; reason: string };

/** A tool's arguments as the request's params: an object as it is, anything else under `input`. */
export function paramsOf(input: unknown): Record<string, unknown> {
  return input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : { input };
}

/** The text the agent gets for a call that did not run. */
export function refusal(action: string, reason: string): string {
  return `Vigil did not run "${action}": ${reason}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Creates the request for a call and answers at once: decided when a policy decided it, pending
 * when it waits for a human, refused when the gate could not be asked (fail closed).
 * `redeemOnIssue`: this process runs the call right after (askApproval's option of that name).
 */
export async function askWithoutWaiting(
  options: GateApprovalsOptions,
  action: string,
  params: Record<string, unknown>,
  context: Record<string, unknown>,
  { redeemOnIssue }: { redeemOnIssue: boolean },
): Promise<Asked> {
  try {
    const outcome = await askApproval(options.gate, action, params, {
      session: options.session,
      context: { ...options.context, ...context },
      ...(options.urgency !== undefined && { urgency: options.urgency }),
      ...(options.expiresInMs !== undefined && { expiresAt: new Date(Date.now() + options.expiresInMs).toISOString() }),
      wait: { timeoutMs: 0 },
      redeemOnIssue,
    });
    return { kind: 'decided', outcome };
  } catch (error) {
    if (error instanceof ApprovalTimeoutError) return { kind: 'pending', requestId: error.requestId };
    return { kind: 'refused', reason: `the gate could not be asked (${messageOf(error)})` };
  }
}

/**
 * Runs `fn` through runApproved for exactly `params` (the arguments executed). Whatever stops it
 * before fn starts (denied, expired, a receipt that does not verify or redeem for these
 * arguments, an unreachable gate) is answered as a refusal text; fn's own errors are rethrown.
 */
export async function runOrRefuse<R>(
  options: GateApprovalsOptions,
  outcome: ApprovalOutcome,
  action: string,
  params: Record<string, unknown>,
  fn: () => R | Promise<R>,
): Promise<Awaited<R> | string> {
  let started = false;
  try {
    return await runApproved(
      options.gate,
      outcome,
      action,
      params,
      () => {
        started = true;
        return fn();
      },
      { session: options.session, ...(options.confirm !== undefined && { confirm: options.confirm }) },
    );
  } catch (error) {
    if (started) throw error;
    return refusal(action, messageOf(error));
  }
}
