/**
 * What the framework integrations (`@vigil/sdk/ai`, `@vigil/sdk/langchain`) share: their
 * options, recording that never breaks the framework's call, and leaving content out on request.
 */
import type { SessionChoice } from './ambient.ts';
import type { LlmCallInput, LlmResponseInput } from './session.ts';

export interface FrameworkCaptureOptions {
  /** The session to record in (default: the ambient one; outside any session calls run unrecorded, with one warning). */
  session?: SessionChoice;
  /**
   * Record the messages, system prompt, completion and tool call arguments (default true). False
   * records the call's shape only (model, parameters, tool definitions, tool call names, usage,
   * cost, latency) with `redacted: true` on llm_call and llm_response.
   */
  captureContent?: boolean;
}

/**
 * Runs one recording step. A failure (a closed client, say) is reported with console.warn and
 * answers undefined: the model or tool call it describes goes on as if nothing were recorded.
 */
export function recordSafely<T>(record: () => T): T | undefined {
  try {
    return record();
  } catch (error) {
    warnRecordingFailed(error);
    return undefined;
  }
}

export function warnRecordingFailed(error: unknown): void {
  console.warn(`vigil: could not record a call: ${error instanceof Error ? error.message : String(error)}`);
}

/** llm_call as recorded: without messages and system prompt when content is not captured. */
export function callRecord(input: LlmCallInput, captureContent: boolean): LlmCallInput {
  if (captureContent) return input;
  const { systemPrompt: _left, ...shape } = input;
  return { ...shape, messages: [], redacted: true };
}

/** llm_response as recorded: without completion and tool call arguments when content is not captured. */
export function responseRecord(response: LlmResponseInput, captureContent: boolean): LlmResponseInput {
  if (captureContent) return response;
  return {
    ...response,
    completion: null,
    redacted: true,
    ...(response.toolCalls && {
      toolCalls: response.toolCalls.map((toolCall) => {
        const { arguments: _left, ...rest } = toolCall as Record<string, unknown>;
        return rest;
      }),
    }),
  };
}
