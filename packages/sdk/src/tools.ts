/**
 * Capture of the agent's own work: `traceTool` records a function as a tool, `withApproval` asks
 * the gate before an action and records the request, the decision and the action in the session.
 */
import { resolveSession, warnUnrecorded, type SessionChoice } from './ambient.ts';
import { ApprovalDeniedError, ApprovalReceiptError, VigilApiError, type ReceiptFailure } from './errors.ts';
import type { ApprovalOutcome, ApprovalRequest, GateClient, NewApprovalRequest, WaitOptions } from './gate.ts';
import { isReceiptShaped, receiptArgsDigest, verifyReceipt, type ApprovalReceipt } from './receipts.ts';
import { storable, type VigilSession } from './session.ts';

export interface TraceToolOptions {
  /** The session to record in (default: the ambient one). */
  session?: SessionChoice;
  /** The MCP server or toolbox the tool belongs to. */
  serverName?: string;
}

/**
 * `fn` as a recorded tool: each call emits tool_call (its arguments: the only argument, or the
 * list), then tool_response with the result or tool_error with the error, with durationMs. The
 * traced function is async; it returns fn's result and rethrows its error.
 */
export function traceTool<A extends unknown[], R>(
  name: string,
  fn: (...args: A) => R | Promise<R>,
  options: TraceToolOptions = {},
): (...args: A) => Promise<Awaited<R>> {
  return async (...args: A): Promise<Awaited<R>> => {
    const session = resolveSession(options.session);
    if (!session) {
      warnUnrecorded(`tool "${name}"`);
      return await fn(...args);
    }
    const recorded = args.length === 1 ? args[0] : args;
    return await session.wrapToolCall(name, recorded, () => fn(...args), options.serverName === undefined ? {} : { serverName: options.serverName });
  };
}

export interface WithApprovalOptions {
  session?: SessionChoice;
  urgency?: NewApprovalRequest['urgency'];
  /**
   * Extra context for the approver. In a session, the session and agent ids are added, and
   * `recordedByAgent: true`: this call records the request's events in the session, so a gate
   * linked to observe does not forward copies of them.
   */
  context?: Record<string, unknown>;
  /** How long and how often to wait for a human (see GateClient.waitForDecision). */
  wait?: WaitOptions;
  /** When the request expires undecided (ISO 8601; the gate then answers it `expired`); without it, it waits for a human indefinitely. */
  expiresAt?: NewApprovalRequest['expiresAt'];
  /** Tell the gate the action ran, with its outcome, once it has (default true; sent off the call path: GateClient.flush waits for it). */
  confirm?: boolean;
  /** The name the action is recorded under as a tool call (default: the action). */
  toolName?: string;
}

const DECISION_EVENT = { approved: 'approval_granted', denied: 'approval_denied', expired: 'approval_expired' } as const;

/**
 * The first half of withApproval, for adapters whose framework asks for permission before it runs
 * the tool itself: creates the request for `action` with `params`, waits for its decision, and
 * records approval_requested and approval_granted, _denied or _expired in the session. Answers the
 * decided request (check `approved`); throws ApprovalTimeoutError when no decision came in time.
 */
export interface AskApprovalOptions extends Omit<WithApprovalOptions, 'confirm' | 'toolName'> {
  /**
   * This process runs the action through runApproved (with this GateClient) right after a policy
   * approval: ask the gate to redeem the receipt at issue (`redeem: true`), so that runApproved
   * needs no separate redeem. Not for an approval run elsewhere (another process, a resumed run):
   * there the separate redeem would be refused (409). Default false.
   */
  redeemOnIssue?: boolean;
}

export async function askApproval(
  gate: GateClient,
  action: string,
  params: Record<string, unknown>,
  options: AskApprovalOptions = {},
): Promise<ApprovalOutcome> {
  const session = resolveSession(options.session);
  const context = {
    // The session's tags, unless the caller's context names its own: a tag budget covers the request from the session's first one.
    ...(session && session.tags.length > 0 && { tags: session.tags }),
    ...options.context,
    ...(session && { sessionId: session.id, agentId: session.agentId, recordedByAgent: true }),
  };
  const created = await gate.createRequest(
    {
      action,
      params,
      context,
      ...(options.urgency !== undefined && { urgency: options.urgency }),
      ...(options.expiresAt !== undefined && { expiresAt: options.expiresAt }),
      ...(options.redeemOnIssue === true && { redeem: true }),
    },
    { signal: options.wait?.signal },
  );
  session?.event('approval_requested', { requestId: created.id, action, params, urgency: created.urgency });
  return awaitApproval(gate, created, action, options);
}

/**
 * Waits for the decision on a request askApproval created (given by id, or as the gate answered
 * it) and records approval_granted, _denied or _expired in the session: for adapters whose
 * framework suspends the run while a human decides, and resumes it, maybe in another process.
 * Throws ApprovalTimeoutError when no decision came in time (nothing recorded then).
 */
export async function awaitApproval(
  gate: GateClient,
  request: string | ApprovalRequest,
  action: string,
  options: Pick<WithApprovalOptions, 'session' | 'wait'> = {},
): Promise<ApprovalOutcome> {
  const outcome =
    typeof request === 'string' ? await gate.waitForDecision(request, options.wait) : await gate.waitForDecision(request.id, options.wait, request);
  recordDecision({ ...outcome, action }, options.session);
  return outcome;
}

/** The gate's refusal of a redemption, by status. */
const REDEEM_REFUSALS: Record<number, ReceiptFailure> = { 400: 'malformed', 401: 'signature', 409: 'replayed', 410: 'expired', 422: 'mismatch' };

/**
 * Records approval_granted, _denied or _expired for a decided request in the session (given or
 * ambient): askApproval does it, and adapters that wait for the decision later (after handing a
 * pending request to their framework's own approval flow) call it once the decision is in.
 */
export function recordDecision(outcome: ApprovalOutcome, sessionChoice?: SessionChoice): void {
  if (outcome.status === 'pending') return;
  resolveSession(sessionChoice)?.event(
    DECISION_EVENT[outcome.status],
    {
      requestId: outcome.id,
      action: outcome.action,
      decidedBy: outcome.decidedBy ?? 'system',
      ...(outcome.decisionReason !== null && { reason: outcome.decisionReason }),
    },
    outcome.approved ? {} : { severity: 'warn' },
  );
}

/**
 * Checks the outcome's receipt and redeems it for exactly `action` and `params`, before anything
 * runs: signed by a trusted gate key (GateClient.receiptKeys), for this request, action and params,
 * not expired, then redeemed once on the gate (which refuses a replay) — or, when this client's own
 * POST had it redeemed at issue (askApproval's redeemOnIssue), that redemption is taken, once.
 * Throws ApprovalReceiptError otherwise. runApproved's first step; exported for callers that run
 * and record the action themselves (the MCP gateway).
 */
export async function redeemOutcome(
  gate: GateClient,
  outcome: ApprovalOutcome,
  action: string,
  params: Record<string, unknown>,
  session: VigilSession | undefined,
): Promise<void> {
  const fail = (reason: ReceiptFailure, message: string, cause?: unknown): never => {
    throw new ApprovalReceiptError(outcome.id, reason, message, cause === undefined ? undefined : { cause });
  };
  const receipt: unknown = outcome.receipt ?? null;
  if (receipt === null) fail('missing', 'the approval carries no receipt');
  if (!isReceiptShaped(receipt)) return fail('malformed', 'the approval receipt is malformed');
  const trusted = async (refresh: boolean) => verifyReceipt(receipt, await gate.receiptKeys({ refresh }));
  // A key not known yet: the gate may have rotated since the keys were fetched.
  if (!(await trusted(false)) && !(await trusted(true))) fail('signature', "the receipt's signature does not verify with the gate's trusted keys");
  if (receipt.requestId !== outcome.id) fail('mismatch', `the receipt is for request ${receipt.requestId}`);
  if (receipt.action !== action) fail('mismatch', `the receipt approves "${receipt.action}", not "${action}"`);
  if (receipt.argsDigest !== (await receiptArgsDigest(params))) fail('mismatch', 'the params differ from the ones approved');
  if (Date.parse(receipt.expiresAt) <= Date.now()) fail('expired', `the receipt expired at ${receipt.expiresAt}`);
  // Redeemed at issue by this client's own POST: the checks above bound it to what runs, the take makes it once.
  if (!gate.takeRedemptionAtIssue(receipt.requestId, receipt.nonce)) {
    try {
      await gate.redeemReceipt({ receipt: receipt as ApprovalReceipt, action, params });
    } catch (error) {
      const reason = error instanceof VigilApiError ? REDEEM_REFUSALS[error.status] : undefined;
      fail(reason ?? 'refused', `the gate refused to redeem the receipt: ${(error as Error).message}`, error);
    }
  }
  // The gate forwards no copy of a request the agent records itself (askApproval's context says so).
  if (outcome.context.recordedByAgent === true) session?.event('custom', { type: 'approval_redeemed', data: { requestId: outcome.id, action } });
}

/**
 * The second half of withApproval: runs `fn` for a decided request only when it was approved AND
 * its receipt verifies AND redeeming it for exactly this `action` and `params` succeeds; records
 * the call as a tool call in the session and tells the gate it ran (confirm, sent off the call
 * path: GateClient.confirmInBackground). Throws
 * ApprovalDeniedError (not approved) or ApprovalReceiptError (a receipt missing, tampered,
 * expired, replayed, or for other arguments): fn never runs then.
 */
export async function runApproved<R>(
  gate: GateClient,
  outcome: ApprovalOutcome,
  action: string,
  params: Record<string, unknown>,
  fn: (outcome: ApprovalOutcome) => R | Promise<R>,
  options: Pick<WithApprovalOptions, 'session' | 'confirm' | 'toolName'> = {},
): Promise<Awaited<R>> {
  if (!outcome.approved) throw new ApprovalDeniedError(outcome);
  const session = resolveSession(options.session);
  if (!session) warnUnrecorded(`approved action "${action}"`);
  await redeemOutcome(gate, outcome, action, params, session);

  // The action has run: its result is not held up by the gate's write, and a failed confirmation
  // (reported to the client's onError) must not make the caller believe it did not run.
  const confirm = (result: Record<string, unknown>): void => {
    if (options.confirm !== false) gate.confirmInBackground(outcome.id, result);
  };
  try {
    const result = session ? await session.wrapToolCall(options.toolName ?? action, params, () => fn(outcome)) : await fn(outcome);
    confirm({ ok: true, result: storable(result) });
    return result as Awaited<R>;
  } catch (error) {
    confirm({ ok: false, error: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

/**
 * Asks the gate for `action` with `params` and runs `fn` only when approved. The session (given
 * or ambient) records approval_requested, then approval_granted, _denied or _expired, and the
 * action itself as a tool call, in order with its other events (the request says so, and the gate
 * forwards no copies); the gate is told the action ran (confirm). Throws
 * ApprovalDeniedError when denied or expired, ApprovalTimeoutError when no decision came in time.
 */
export async function withApproval<R>(
  gate: GateClient,
  action: string,
  params: Record<string, unknown>,
  fn: (outcome: ApprovalOutcome) => R | Promise<R>,
  options: WithApprovalOptions = {},
): Promise<Awaited<R>> {
  // This call runs the action itself, now: the receipt is redeemed at issue when a policy approves at once.
  const outcome = await askApproval(gate, action, params, { ...options, redeemOnIssue: true });
  return runApproved(gate, outcome, action, params, fn, options);
}
