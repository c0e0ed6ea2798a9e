/**
 * `@vigil/sdk/ai-approval`: the Vigil gate as the Vercel AI SDK's tool approval. `gateApprovals()`
 * answers the AI SDK's approval hook from the gate's policies and humans — `needsApproval` (ai 6;
 * `tools(toolSet)` sets it) or `toolApproval` (ai 7) — and wraps each tool's execute so that it runs
 * only a call the gate approved for exactly the arguments executed (runApproved). A request the
 * gate routes to a human is waited for (`wait`), or, past `askAfterMs`, handed to the AI SDK's own
 * approval flow: `responses(result.content)` waits for the gate's decisions and answers the
 * `tool-approval-response` parts to continue with. Only types come from `ai`.
 */
import type { ToolExecutionOptions, ToolSet } from 'ai';
import { ToolGate, type GateVerdict, type ToolGateOptions } from './tool-gate.ts';

export { ToolNotApprovedError, type ToolGateOptions } from './tool-gate.ts';

/** ai 7's tool approval status, as `toolApproval` answers it. */
export type GateApprovalStatus = { type: 'approved'; reason: string } | { type: 'denied'; reason: string } | { type: 'user-approval'; reason: string };

/** ai's `tool-approval-response` part. */
export interface GateApprovalResponse {
  type: 'tool-approval-response';
  approvalId: string;
  approved: boolean;
  reason: string;
}

export interface GateApprovals {
  /**
   * The tools, each asking the gate before it runs: `needsApproval` asks (the AI SDK's approval
   * hook in ai 6; ai 7 uses `toolApproval` instead when given) and execute runs only approved calls.
   */
  tools<TOOLS extends ToolSet>(tools: TOOLS): TOOLS;
  /** ai 7: pass as `toolApproval` to generateText, streamText or ToolLoopAgent. */
  toolApproval(options: { toolCall: { toolCallId: string; toolName: string; input: unknown } }): Promise<GateApprovalStatus>;
  /**
   * For the `tool-approval-request` parts of a result handed to the user (pending past
   * askAfterMs): waits for the gate's decisions and answers the `tool-approval-response` parts to
   * add as a `{ role: 'tool' }` message before calling the model again.
   */
  responses(content: readonly unknown[]): Promise<GateApprovalResponse[]>;
}

const STATUS: Record<GateVerdict['kind'], GateApprovalStatus['type']> = { approved: 'approved', denied: 'denied', ask: 'user-approval' };

export function gateApprovals(options: ToolGateOptions): GateApprovals {
  const gate = new ToolGate(options);
  return {
    tools<TOOLS extends ToolSet>(tools: TOOLS): TOOLS {
      const gated: ToolSet = {};
      for (const [name, tool] of Object.entries(tools)) {
        const execute = tool.execute;
        gated[name] = {
          ...tool,
          // A denied call is not handed to the user: its execute refuses it, and the model reads why.
          needsApproval: async (input: unknown, { toolCallId }: { toolCallId: string }) => (await gate.decide(toolCallId, name, input)).kind === 'ask',
          ...(execute && {
            execute: (input: unknown, execution: ToolExecutionOptions) =>
              gate.run(execution.toolCallId, name, input, () => execute(input, execution) as unknown),
          }),
        } as ToolSet[string];
      }
      return gated as TOOLS;
    },
    async toolApproval({ toolCall }) {
      const verdict = await gate.decide(toolCall.toolCallId, toolCall.toolName, toolCall.input);
      // ai 7 does not call execute for a denied call.
      if (verdict.kind === 'denied') gate.forget(toolCall.toolCallId);
      return { type: STATUS[verdict.kind], reason: verdict.reason };
    },
    async responses(content) {
      const answers: GateApprovalResponse[] = [];
      for (const part of content as Array<{ type?: string; approvalId?: string; isAutomatic?: boolean; toolCall?: { toolCallId: string } }>) {
        if (part.type !== 'tool-approval-request' || part.isAutomatic === true || !part.toolCall || part.approvalId === undefined) continue;
        const answer = await gate.answer(part.toolCall.toolCallId);
        if (answer) answers.push({ type: 'tool-approval-response', approvalId: part.approvalId, ...answer });
      }
      return answers;
    },
  };
}
