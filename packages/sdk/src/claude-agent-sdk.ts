/**
 * `@vigil/sdk/claude-agent-sdk`: the gate as the permission handler of the Claude Agent SDK
 * (`@anthropic-ai/claude-agent-sdk`). `vigilPermissions(gate)` answers `{ canUseTool, hooks }` for
 * `query({ prompt, options: { ...vigilPermissions(gate), ... } })`:
 * - `canUseTool` turns each permission check into an approval request (action: the tool's name,
 *   params: its input), waits for the decision and allows the call with `updatedInput` = exactly
 *   the approved input, only after its receipt verified and was redeemed for that input (runApproved);
 *   a denial, an expiry, no decision in time, an unreachable gate or a refused approval denies
 *   the call with a message Claude can show (fail closed).
 * - `hooks` (PostToolUse, PostToolUseFailure) record the execution and confirm it to the gate.
 * The session records approval_requested, the decision and the tool call once each. Types are
 * declared here (the shapes of the Agent SDK's CanUseTool and hook callbacks), so this entry
 * needs nothing from the Agent SDK at run time.
 */
import type { ApprovalOutcome, GateClient } from './gate.ts';
import { askApproval, runApproved, type WithApprovalOptions } from './tools.ts';

/** The Agent SDK's PermissionResult (what canUseTool answers). */
export type ClaudePermissionResult =
  | { behavior: 'allow'; updatedInput?: Record<string, unknown>; toolUseID?: string }
  | { behavior: 'deny'; message: string; interrupt?: boolean; toolUseID?: string };

/** The Agent SDK's CanUseTool, as far as this adapter reads it. */
export type ClaudeCanUseTool = (
  toolName: string,
  input: Record<string, unknown>,
  options: { signal: AbortSignal; toolUseID: string; agentID?: string },
) => Promise<ClaudePermissionResult>;

interface PostToolUseInput {
  hook_event_name: string;
  tool_use_id?: string;
  tool_response?: unknown;
  error?: string;
}

/** The Agent SDK's HookCallback, as far as this adapter reads it. */
export type ClaudeHookCallback = (input: unknown, toolUseID: string | undefined, options: { signal: AbortSignal }) => Promise<Record<string, never>>;

export interface VigilPermissions {
  canUseTool: ClaudeCanUseTool;
  hooks: { PostToolUse: Array<{ hooks: ClaudeHookCallback[] }>; PostToolUseFailure: Array<{ hooks: ClaudeHookCallback[] }> };
}

export interface VigilPermissionsOptions extends Omit<WithApprovalOptions, 'confirm' | 'toolName' | 'expiresAt'> {
  /** Each request expires undecided this long after it is made (then the call is denied). */
  expiresInMs?: number;
  /** Tools that run without asking the gate (e.g. ['Read', 'Glob']); every other tool asks. */
  allowTools?: readonly string[];
  /** Tell the gate each approved call ran, with its outcome (default true). */
  confirm?: boolean;
}

/** One allowed tool use until the CLI reports how it ended. */
interface Running {
  settle(outcome: { ok: true; result: unknown } | { ok: false; error: string }): void;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What the agent is told when the gate did not approve. */
function refusal(outcome: ApprovalOutcome): string {
  const by = outcome.decidedBy ? ` by ${outcome.decidedBy}` : '';
  const why = outcome.decisionReason ? `: ${outcome.decisionReason}` : '';
  return `Vigil ${outcome.status === 'pending' ? 'has no decision yet on' : outcome.status === 'expired' ? 'let expire' : 'denied'} request ${outcome.id}${by}${why}`;
}

/**
 * The gate as the Agent SDK's permission handler: spread the answer into `query`'s options (merge
 * `hooks` with your own if you have any).
 */
export function vigilPermissions(gate: GateClient, options: VigilPermissionsOptions = {}): VigilPermissions {
  const { allowTools = [], confirm, expiresInMs, ...ask } = options;
  const running = new Map<string, Running>();
  const approvals = new Map<string, ApprovalOutcome>();

  const canUseTool: ClaudeCanUseTool = async (toolName, input, { signal, toolUseID, agentID }) => {
    if (allowTools.includes(toolName)) return { behavior: 'allow', updatedInput: input, toolUseID };
    // The approved params are a copy: what runs is what was approved, whatever later edits `input`.
    const params = structuredClone(input);
    // A tool use asked about again (a resumed run) keeps its one decision: its receipt then binds it
    // to the arguments first approved, and is redeemed once.
    let outcome = approvals.get(toolUseID);
    if (outcome === undefined) {
      try {
        outcome = await askApproval(gate, toolName, params, {
          ...ask,
          context: { ...ask.context, via: 'claude-agent-sdk', claudeCode: { toolUseId: toolUseID, ...(agentID !== undefined && { agentId: agentID }) } },
          wait: { ...ask.wait, signal },
          ...(expiresInMs !== undefined && { expiresAt: new Date(Date.now() + expiresInMs).toISOString() }),
          // Approved at once, the call is accepted by runApproved below, in this process.
          redeemOnIssue: true,
        });
      } catch (error) {
        return { behavior: 'deny', message: `Vigil could not decide this call (${reasonOf(error)}); it is denied.`, toolUseID };
      }
      if (outcome.approved) approvals.set(toolUseID, outcome);
    }
    if (!outcome.approved) return { behavior: 'deny', message: refusal(outcome), toolUseID };

    // runApproved accepts the approved call for exactly these params (or throws) before it starts
    // the "run": from then on it waits for the CLI's PostToolUse report to record and confirm it.
    let started!: () => void;
    const accepted = new Promise<void>((resolve) => (started = resolve));
    const execution = runApproved(
      gate,
      outcome,
      toolName,
      params,
      () =>
        new Promise<unknown>((resolve, reject) => {
          running.set(toolUseID, { settle: (ended) => (ended.ok ? resolve(ended.result) : reject(new Error(ended.error))) });
          started();
        }),
      { session: ask.session, toolName, ...(confirm !== undefined && { confirm }) },
    );
    // The tool's own failure is recorded by runApproved and reported by Claude Code itself.
    execution.catch(() => undefined);
    try {
      await Promise.race([accepted, execution]);
    } catch (error) {
      return { behavior: 'deny', message: `Vigil refused the approved call: ${reasonOf(error)}`, toolUseID };
    }
    return { behavior: 'allow', updatedInput: structuredClone(params), toolUseID };
  };

  const report: ClaudeHookCallback = async (input) => {
    const { hook_event_name: event, tool_use_id: id, tool_response: result, error } = input as PostToolUseInput;
    const call = id === undefined ? undefined : running.get(id);
    if (call !== undefined && id !== undefined) {
      running.delete(id);
      call.settle(event === 'PostToolUseFailure' ? { ok: false, error: error ?? 'the tool failed' } : { ok: true, result });
    }
    return {};
  };

  return { canUseTool, hooks: { PostToolUse: [{ hooks: [report] }], PostToolUseFailure: [{ hooks: [report] }] } };
}
