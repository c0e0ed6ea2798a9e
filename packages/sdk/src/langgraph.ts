/**
 * `@vigil/sdk/langgraph`: the gate as the reviewer of LangGraph.js human-in-the-loop interrupts.
 * `new VigilGraphApprovals({ gate })`:
 * - `run(action, args, fn)`, inside a tool or a node, pauses the graph with LangGraph's
 *   `interrupt()` (a HumanInterrupt of `action` with `args`, the prebuilt agents' format), and once
 *   resumed runs `fn` only through runApproved with the arguments actually executed: a call the
 *   gate did not approve for exactly them does not run, and the tool answers the reason instead.
 * - `resume(graph, config)` turns each pending interrupt of the thread into a gate request, waits
 *   for its decision (a policy's at once, a human's later) and resumes the graph with
 *   `new Command({ resume })`: `accept` when approved, `response` (the reason) when denied or
 *   expired, `edit` for arguments a human changed (`edits`), which the gate approves in their turn.
 * The session records each request, decision and executed call once.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { Command, interrupt, type StateSnapshot } from '@langchain/langgraph';
import type { ActionRequest, HumanInterrupt, HumanResponse } from '@langchain/langgraph/prebuilt';
import { askWithoutWaiting, refusal, runOrRefuse, type GateApprovalsOptions } from './approval-adapters.ts';
import type { ApprovalOutcome } from './gate.ts';
import { awaitApproval } from './tools.ts';

export type VigilGraphApprovalsOptions = GateApprovalsOptions;

/** The interrupt `run` raises: a HumanInterrupt that says the gate reviews it. */
export interface GateInterrupt extends HumanInterrupt {
  vigil: 1;
}

/**
 * What the graph is resumed with: HumanResponse (accept, edit with the arguments to run, response
 * with the refusal) plus the gate's decided request, whose receipt runApproved redeems.
 */
export type GateResponse = HumanResponse & { outcome?: ApprovalOutcome };

/** A pending interrupt of the gate, as `pending` lists them. */
export interface PendingGateCall {
  interruptId: string;
  action: string;
  args: Record<string, unknown>;
}

/** What resume needs of a compiled graph (CompiledStateGraph, createReactAgent's agent). */
export interface ResumableGraph<T> {
  getState(config: RunnableConfig): Promise<StateSnapshot>;
  invoke(input: Command, config: RunnableConfig): Promise<T>;
}

export interface ResumeOptions {
  /** Arguments a human changed, by interrupt id: the gate is asked for these instead, and the call runs with them. */
  edits?: Record<string, Record<string, unknown>>;
}

function isGateInterrupt(value: unknown): value is GateInterrupt {
  return (value as Partial<GateInterrupt> | null)?.vigil === 1;
}

export class VigilGraphApprovals {
  /** Requests made for interrupts still waiting for a human, by interrupt id: a later resume waits on them again. */
  private readonly asked = new Map<string, { requestId: string; action: string; args: Record<string, unknown> }>();

  constructor(private readonly options: VigilGraphApprovalsOptions) {}

  /**
   * Call inside a tool or a node (not in a try/catch that swallows LangGraph's interrupt): pauses
   * the graph for the gate, then runs `fn` with the approved arguments — or answers the refusal.
   */
  async run<A extends Record<string, unknown>, R>(action: string, args: A, fn: (args: A) => R | Promise<R>): Promise<Awaited<R> | string> {
    const request: GateInterrupt = {
      vigil: 1,
      action_request: { action, args },
      config: { allow_accept: true, allow_edit: true, allow_respond: true, allow_ignore: false },
      description: `Vigil: "${action}" needs the gate's approval`,
    };
    const response = interrupt<GateInterrupt, GateResponse>(request);
    if (response.type === 'accept' || response.type === 'edit') {
      const executed = response.type === 'edit' ? ((response.args as ActionRequest).args as A) : args;
      if (!response.outcome) return refusal(action, 'the graph was resumed without the gate’s decision');
      return runOrRefuse(this.options, response.outcome, action, executed, async () => await fn(executed));
    }
    return refusal(action, typeof response.args === 'string' ? response.args : `resumed with "${response.type}"`);
  }

  /** The thread's interrupts that wait for the gate. */
  async pending(graph: Pick<ResumableGraph<unknown>, 'getState'>, config: RunnableConfig): Promise<PendingGateCall[]> {
    const snapshot = await graph.getState(config);
    return snapshot.tasks.flatMap((task) =>
      task.interrupts
        .filter((pending) => pending.id !== undefined && isGateInterrupt(pending.value))
        .map((pending) => {
          const { action, args } = (pending.value as GateInterrupt).action_request;
          return { interruptId: pending.id!, action, args };
        }),
    );
  }

  /**
   * Asks the gate for each pending interrupt of the thread (waiting as options.wait says) and
   * resumes the graph with the decisions; answers what the graph answers, or undefined when
   * nothing waited for the gate. Throws ApprovalTimeoutError while a human has not decided (a later
   * resume of this object waits on the same request), and the gate's error when it could be asked
   * but not heard from.
   */
  async resume<T>(graph: ResumableGraph<T>, config: RunnableConfig, options: ResumeOptions = {}): Promise<T | undefined> {
    const calls = await this.pending(graph, config);
    if (calls.length === 0) return undefined;
    const resume: Record<string, GateResponse> = {};
    for (const call of calls) resume[call.interruptId] = await this.decide(call, options.edits?.[call.interruptId]);
    for (const call of calls) this.asked.delete(call.interruptId);
    return graph.invoke(new Command({ resume }), config);
  }

  private async decide(call: PendingGateCall, edited: Record<string, unknown> | undefined): Promise<GateResponse> {
    const args = edited ?? call.args;
    let asked = this.asked.get(call.interruptId);
    if (!asked || JSON.stringify(asked.args) !== JSON.stringify(args)) {
      const context = { interruptId: call.interruptId, framework: 'langgraph', ...(edited && { editedFrom: call.args }) };
      // Decided at once, the call runs in this process: resume invokes the graph right after.
      const answer = await askWithoutWaiting(this.options, call.action, args, context, { redeemOnIssue: true });
      if (answer.kind === 'refused') return { type: 'response', args: answer.reason };
      if (answer.kind === 'decided') return this.response(call.action, args, answer.outcome, edited !== undefined);
      asked = { requestId: answer.requestId, action: call.action, args };
      this.asked.set(call.interruptId, asked);
    }
    const outcome = await awaitApproval(this.options.gate, asked.requestId, call.action, { session: this.options.session, wait: this.options.wait });
    return this.response(call.action, args, outcome, edited !== undefined);
  }

  private response(action: string, args: Record<string, unknown>, outcome: ApprovalOutcome, edited: boolean): GateResponse {
    if (!outcome.approved) {
      return { type: 'response', args: `request ${outcome.id} was ${outcome.status}${outcome.decisionReason ? `: ${outcome.decisionReason}` : ''}` };
    }
    return edited ? { type: 'edit', args: { action, args }, outcome } : { type: 'accept', args: null, outcome };
  }
}
