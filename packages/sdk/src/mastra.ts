/**
 * `@vigil/sdk/mastra`: the Vigil gate as Mastra's tool-call approval. `gateApprovals().tool(def)`
 * turns a `createTool` definition into one whose `requireApproval` asks the gate (its policies, a
 * human through the gate's API or dashboard) and whose execute runs only a call the gate approved
 * for exactly the arguments executed (runApproved); a denied, expired or unaskable call is not run
 * and the model reads why. A request still undecided after `askAfterMs` suspends the run as
 * Mastra's own approval does: `decision(suspendPayload)` waits for the gate's decision, to pass on
 * to `approveToolCall` or `declineToolCall`. Nothing is imported from `@mastra/core`.
 */
import { argumentsKey, ToolGate, type ToolGateOptions } from './tool-gate.ts';

export { ToolNotApprovedError, type ToolGateOptions } from './tool-gate.ts';

/** The part of a Mastra `createTool` definition the gate needs (its id names the tool; keep it equal to its key in the agent's tools). */
export interface MastraToolDefinition {
  id: string;
  inputSchema?: unknown;
  execute?: (input: never, context: never) => Promise<unknown>;
}

/** A Standard Schema (zod and the others Mastra takes): what Mastra hands execute is the validated input. */
interface StandardSchema {
  '~standard': { validate(value: unknown): { value?: unknown; issues?: unknown } | Promise<{ value?: unknown; issues?: unknown }> };
}

/**
 * The input as execute will receive it (defaults filled in, values coerced), so the approval is for
 * the call that runs; the input as the model sent it when the schema rejects it (Mastra refuses it).
 */
async function validated(schema: unknown, input: unknown): Promise<unknown> {
  const standard = (schema as StandardSchema | undefined)?.['~standard'];
  if (!standard) return input;
  const result = await standard.validate(input);
  return result.issues === undefined ? result.value : input;
}

export interface MastraGateApprovals {
  /** The definition with `requireApproval` answered by the gate and an execute that runs only approved calls; pass it to createTool. */
  tool<T extends MastraToolDefinition>(definition: T): T;
  /** For a run suspended for approval (its `suspendPayload`): waits for the gate's decision to answer approveToolCall / declineToolCall with. */
  decision(suspended: { toolName: string; args: unknown }): Promise<{ approved: boolean; reason: string }>;
}

export function gateApprovals(options: ToolGateOptions): MastraGateApprovals {
  const gate = new ToolGate(options);
  const schemas = new Map<string, unknown>();
  return {
    tool<T extends MastraToolDefinition>(definition: T): T {
      schemas.set(definition.id, definition.inputSchema);
      const execute = definition.execute as ((input: unknown, context: unknown) => Promise<unknown>) | undefined;
      return {
        ...definition,
        // Mastra suspends the run (its own approval) only while the gate has no decision; a denied call reaches execute, which refuses it.
        requireApproval: async (input: unknown) => {
          const args = await validated(definition.inputSchema, input);
          return (await gate.decide(argumentsKey(definition.id, args), definition.id, args)).kind === 'ask';
        },
        ...(execute && {
          execute: (input: unknown, context: unknown) => gate.run(argumentsKey(definition.id, input), definition.id, input, () => execute(input, context)),
        }),
      };
    },
    async decision({ toolName, args }) {
      const answer = await gate.answer(argumentsKey(toolName, await validated(schemas.get(toolName), args)));
      return answer ?? { approved: false, reason: `Vigil was not asked about this call of "${toolName}"` };
    },
  };
}
