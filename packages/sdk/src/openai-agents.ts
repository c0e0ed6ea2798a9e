/**
 * `@vigil/sdk/openai-agents`: the gate as the approval back-end of the OpenAI Agents SDK
 * (`@openai/agents`). `new VigilAgentApprovals({ gate })` gives a tool its `needsApproval` and
 * wraps its `execute`:
 * - `needsApproval` asks the gate. A call a policy decides at once goes on (no interruption); a
 *   call routed to a human interrupts the run, as `needsApproval: true` would.
 * - `execute` runs the tool only through runApproved with the arguments actually executed: denied,
 *   expired, unreachable gate or a receipt that does not redeem for these arguments → the tool does
 *   not run and the model gets the reason as the tool's output.
 * - `suspend(result)` turns an interrupted run into what to store (its serialised RunState and the
 *   gate requests of its interruptions) and sends the session's queued events; `resume(agent, suspended)` — in this process or another
 *   one after a restart — waits for the gate's decisions and answers the RunState to run again,
 *   with each interruption approved or rejected (with the reason) as the gate decided.
 * The session records each request, decision and executed call once.
 */
import { RunState, type Agent, type RunContext, type RunToolApprovalItem } from '@openai/agents';
import { resolveSession } from './ambient.ts';
import { askWithoutWaiting, paramsOf, refusal, runOrRefuse, type GateApprovalsOptions } from './approval-adapters.ts';
import type { ApprovalOutcome } from './gate.ts';
import { awaitApproval } from './tools.ts';

export type VigilAgentApprovalsOptions = GateApprovalsOptions;

/** A gate request waiting for a human, for one interrupted tool call. */
export interface SuspendedCall {
  requestId: string;
  action: string;
}

/** An interrupted run as it can be stored (JSON) and resumed later, by any process. */
export interface SuspendedRun {
  /** RunState.toString() of the interrupted run. */
  runState: string;
  /** The gate request of each interrupted tool call, by call id. */
  calls: Record<string, SuspendedCall>;
  /** The session that recorded the requests (continue it to record the rest: `continues: true`). */
  session: { id: string; agentId: string } | null;
}

/** Any agent: the SDK's own signatures take Agent<any, any>. */
type AnyAgent = Agent<any, any>;

/** What execute needs to know about a call: the gate's decision, or why there is none. */
type Decision = { action: string; outcome: ApprovalOutcome } | { action: string; refused: string };

function callIdOf(item: RunToolApprovalItem): string | undefined {
  const callId = (item.rawItem as { callId?: unknown }).callId;
  return typeof callId === 'string' ? callId : undefined;
}

export class VigilAgentApprovals {
  /** Calls decided (or refused) before they run, by call id; execute takes them out. */
  private readonly decisions = new Map<string, Decision>();
  /** Calls waiting for a human, by call id. */
  private readonly waiting = new Map<string, SuspendedCall>();

  constructor(private readonly options: VigilAgentApprovalsOptions) {}

  /** The tool's `needsApproval`: asks the gate for `action` with the call's arguments. */
  needsApproval(action: string): (runContext: RunContext<unknown>, input: unknown, callId?: string) => Promise<boolean> {
    return async (_runContext, input, callId) => {
      // Without a call id the decision could not follow the call: let the interruption ask.
      if (callId === undefined || this.waiting.has(callId)) return true;
      // Asked already (the SDK evaluates again after a RunState is restored): the decision stands.
      if (this.decisions.has(callId)) return false;
      // Approved at once, the call runs in this process (execute): its receipt is redeemed at issue.
      const asked = await askWithoutWaiting(this.options, action, paramsOf(input), { callId, framework: 'openai-agents' }, { redeemOnIssue: true });
      if (asked.kind === 'pending') {
        this.waiting.set(callId, { requestId: asked.requestId, action });
        return true;
      }
      this.decisions.set(callId, asked.kind === 'decided' ? { action, outcome: asked.outcome } : { action, refused: asked.reason });
      return false;
    };
  }

  /**
   * The tool's `execute`: runs `fn` only for a call the gate approved for exactly these arguments
   * (verified and redeemed at this moment); answers the refusal's text instead otherwise.
   */
  execute<I, R, C = unknown>(
    action: string,
    fn: (input: I, context?: RunContext<C>, details?: { toolCall?: { callId: string } }) => R | Promise<R>,
  ): (input: I, context?: RunContext<C>, details?: { toolCall?: { callId: string } }) => Promise<Awaited<R> | string> {
    return async (input, context, details): Promise<Awaited<R> | string> => {
      const callId = details?.toolCall?.callId;
      const decision = callId === undefined ? undefined : this.decisions.get(callId);
      if (callId !== undefined) this.decisions.delete(callId);
      if (!decision || decision.action !== action) return refusal(action, 'the gate was not asked for this call');
      if ('refused' in decision) return refusal(action, decision.refused);
      return runOrRefuse(this.options, decision.outcome, action, paramsOf(input), async () => await fn(input, context, details));
    };
  }

  /**
   * An interrupted run as it can be stored: its RunState and the gate request of each interrupted
   * call (asked now for a call whose tool interrupts without this needsApproval).
   */
  async suspend(result: { state: { toString(): string }; interruptions: RunToolApprovalItem[] }): Promise<SuspendedRun> {
    const calls: Record<string, SuspendedCall> = {};
    for (const item of result.interruptions) {
      const callId = callIdOf(item);
      const action = item.name ?? 'tool';
      if (callId === undefined) continue;
      let call = this.waiting.get(callId);
      if (!call) {
        const args = item.arguments === undefined ? {} : (JSON.parse(item.arguments) as unknown);
        // The run may resume in another process, which redeems the receipt then.
        const asked = await askWithoutWaiting(this.options, action, paramsOf(args), { callId, framework: 'openai-agents' }, { redeemOnIssue: false });
        if (asked.kind === 'refused') throw new Error(refusal(action, asked.reason));
        call = { requestId: asked.kind === 'pending' ? asked.requestId : asked.outcome.id, action };
      }
      this.waiting.delete(callId);
      calls[callId] = call;
    }
    const session = resolveSession(this.options.session);
    // The run may be resumed by another process: what this one recorded is sent now, not with the next batch.
    await session?.flush().catch(() => undefined);
    return { runState: result.state.toString(), calls, session: session ? { id: session.id, agentId: session.agentId } : null };
  }

  /**
   * The stored run, ready to run again: waits (options.wait) for the gate's decision on each
   * interrupted call and approves it, or rejects it with the reason the model will see. Throws
   * ApprovalTimeoutError while a decision is still pending, and the gate's error when it cannot be
   * reached: nothing is decided then, and resume can be called again later.
   */
  async resume<A extends AnyAgent>(agent: A, suspended: SuspendedRun): Promise<RunState<unknown, A>> {
    const state = await RunState.fromString<unknown, A>(agent, suspended.runState);
    for (const item of state.getInterruptions()) {
      const callId = callIdOf(item);
      const call = callId === undefined ? undefined : suspended.calls[callId];
      if (callId === undefined || !call) {
        state.reject(item, { message: refusal(item.name ?? 'tool', 'no gate request was made for this call') });
        continue;
      }
      const outcome = await awaitApproval(this.options.gate, call.requestId, call.action, { session: this.options.session, wait: this.options.wait });
      this.decisions.set(callId, { action: call.action, outcome });
      if (outcome.approved) state.approve(item);
      else
        state.reject(item, {
          message: refusal(call.action, `request ${outcome.id} was ${outcome.status}${outcome.decisionReason ? `: ${outcome.decisionReason}` : ''}`),
        });
    }
    return state;
  }
}
