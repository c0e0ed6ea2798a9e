/**
 * `@vigil/sdk/langchain`: capture for LangChain.js. `new VigilCallbackHandler()` is a callback
 * handler: pass it in `callbacks` (of a model, a tool, a chain, or one invoke's config) and the
 * runs it sees are recorded in the session (given, else ambient):
 * - chat model and LLM runs: llm_call, then llm_response (text, tool calls, tokens, cost from the
 *   price table, latency) or, when the provider fails, an error-severity tool_error with its status;
 * - tool runs: tool_call, then tool_response or tool_error (callId = the model's tool-call id when
 *   the tool ran for one), with durationMs;
 * - chain runs (RunnableSequence, prompts, parsers, agents…): `custom` events `chain_start`,
 *   `chain_end` and `chain_error` (severity error), with the run's name and durationMs.
 * Every event carries `metadata.langchainRunId` and, for a nested run, `langchainParentRunId`, so
 * the tree of runs can be rebuilt. Runs LangChain hides from tracing (tag `langsmith:hidden`) are
 * not recorded. A run's children are recorded in the run's session.
 */
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import type { BaseMessage } from '@langchain/core/messages';
import type { ChatGeneration, LLMResult } from '@langchain/core/outputs';
import type { ChainValues } from '@langchain/core/utils/types';
import { resolveSession, warnUnrecorded, type SessionChoice } from './ambient.ts';
import { toolArguments } from './capture.ts';
import { callRecord, recordSafely, responseRecord, warnRecordingFailed, type FrameworkCaptureOptions } from './framework-capture.ts';
import type { LlmCallHandle, VigilSession } from './session.ts';

/**
 * `session`: where to record (default: the ambient one when a top-level run starts; a run's
 * children go to the run's session). `captureContent: false` also leaves out chain inputs and
 * outputs; tool runs record their arguments and results as traceTool does.
 */
export type VigilCallbackHandlerOptions = FrameworkCaptureOptions;

/** LangChain's provider ids (`ls_provider`) as the price table names them; others pass through. */
const PROVIDER_NAMES: Record<string, string> = {
  azure: 'openai',
  google_genai: 'google',
  google_vertexai: 'google',
  mistralai: 'mistral',
  bedrock: 'amazon',
  amazon_bedrock: 'amazon',
};

const ROLES: Record<string, string> = { human: 'user', ai: 'assistant', system: 'system', tool: 'tool', generic: 'user' };

/** The tag of runs kept out of traces (LangGraph's internal steps, for instance). */
const HIDDEN = 'langsmith:hidden';

interface RunState {
  session: VigilSession;
  metadata: Record<string, unknown>;
  name: string;
  startedAt: number;
  llmCall?: LlmCallHandle;
  /** A tool run: settles the wrapToolCall recording its outcome; `recorded` resolves once it is. */
  tool?: { finish(output: unknown): void; fail(error: unknown): void; recorded: Promise<unknown> };
}

/** A JSON-storable copy (LangChain objects serialize through their toJSON). */
function storable(value: unknown): unknown {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value) ?? 'null');
  } catch (error) {
    return { unserializable: true, reason: (error as Error).message };
  }
}

function runName(serialized: Serialized | undefined, name: string | undefined): string {
  return name ?? serialized?.name ?? serialized?.id?.at(-1) ?? 'unnamed';
}

/** What LangChain passes both model-start callbacks after the model and its input: the run's identity and options. */
type ModelRun = [
  runId: string,
  parentRunId?: string,
  extraParams?: Record<string, unknown>,
  tags?: string[],
  metadata?: Record<string, unknown>,
  name?: string,
];

interface StoredMessage {
  role: string;
  content: unknown;
  [field: string]: unknown;
}

function storedMessage(message: BaseMessage): StoredMessage {
  const fields = message as unknown as { tool_calls?: Array<{ id?: string; name: string; args: unknown }>; tool_call_id?: string; name?: string };
  const type = message.getType();
  return {
    role: ROLES[type] ?? type,
    content: storable(message.content),
    ...(fields.name !== undefined && { name: fields.name }),
    ...(fields.tool_calls !== undefined && fields.tool_calls.length > 0 && { toolCalls: fields.tool_calls.map(toolCallRecord) }),
    ...(fields.tool_call_id !== undefined && { toolCallId: fields.tool_call_id }),
  };
}

function toolCallRecord(call: { id?: string; name: string; args: unknown }): { id: string | null; name: string; arguments: unknown } {
  return { id: call.id ?? null, name: call.name, arguments: call.args };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'string' ? part : ((part as { text?: unknown }).text ?? ''))).join('');
  return '';
}

interface UsageMetadata {
  input_tokens?: number;
  output_tokens?: number;
  input_token_details?: { cache_read?: number; cache_creation?: number };
  output_token_details?: { reasoning?: number };
}

/** Cache and reasoning counts, kept beside the totals they are part of (the price table has no cache rates). */
function usageDetails(usage: UsageMetadata | undefined): Record<string, number> {
  const read = usage?.input_token_details?.cache_read;
  const created = usage?.input_token_details?.cache_creation;
  const reasoning = usage?.output_token_details?.reasoning;
  return {
    ...(read && { cacheReadInputTokens: read }),
    ...(created && { cacheCreationInputTokens: created }),
    ...(reasoning && { reasoningTokens: reasoning }),
  };
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

export class VigilCallbackHandler extends BaseCallbackHandler {
  name = 'vigil';
  private readonly session: SessionChoice;
  private readonly captureContent: boolean;
  private readonly runs = new Map<string, RunState>();

  constructor(options: VigilCallbackHandlerOptions = {}) {
    // Awaited handlers run in the caller's async context (so the ambient session is found) and
    // record each event before LangChain moves on (so events keep the order of the runs).
    super({ _awaitHandler: true });
    this.session = options.session;
    this.captureContent = options.captureContent ?? true;
  }

  /** The run's session (its parent's, else the given or ambient one), its metadata, and its state. */
  private begin(runId: string, parentRunId: string | undefined, name: string, tags: string[] | undefined, kind: string): RunState | undefined {
    if (tags?.includes(HIDDEN)) return undefined;
    const session = (parentRunId !== undefined ? this.runs.get(parentRunId)?.session : undefined) ?? resolveSession(this.session);
    if (!session) {
      warnUnrecorded(`LangChain ${kind} "${name}"`);
      return undefined;
    }
    const metadata = { langchainRunId: runId, ...(parentRunId !== undefined && { langchainParentRunId: parentRunId }) };
    const run: RunState = { session, metadata, name, startedAt: performance.now() };
    this.runs.set(runId, run);
    return run;
  }

  private end(runId: string): RunState | undefined {
    const run = this.runs.get(runId);
    this.runs.delete(runId);
    return run;
  }

  // ---------------------------------------------------------------------------------------------
  // Models

  private startModel(serialized: Serialized, messages: StoredMessage[], ...[runId, parentRunId, extraParams, tags, metadata, name]: ModelRun): void {
    const invocation = (extraParams?.invocation_params ?? {}) as Record<string, unknown>;
    const model = String(metadata?.ls_model_name ?? invocation.model ?? invocation.model_name ?? invocation.modelName ?? 'unknown');
    const run = this.begin(runId, parentRunId, runName(serialized, name), tags, 'model');
    if (!run) return;
    const lsProvider = String(metadata?.ls_provider ?? serialized.id?.at(-1) ?? 'unknown');
    const system = messages.filter((message) => message.role === 'system').map((message) => textOf(message.content));
    // `stream` says how the model was configured, not whether this call streamed: left out.
    const { tools, model: _model, model_name: _modelName, messages: _messages, stream: _stream, stream_options: _streamOptions, ...parameters } = invocation;
    const input = {
      provider: PROVIDER_NAMES[lsProvider] ?? lsProvider,
      model,
      messages: messages.filter((message) => message.role !== 'system'),
      ...(system.length > 0 && { systemPrompt: system.join('\n\n') }),
      ...(Object.keys(parameters).length > 0 && { parameters: storable(parameters) as Record<string, unknown> }),
      ...(Array.isArray(tools) && tools.length > 0 && { tools: storable(tools) as unknown[] }),
    };
    run.llmCall = recordSafely(() => run.session.recordLlmCall(callRecord(input, this.captureContent), { metadata: run.metadata }));
  }

  override handleChatModelStart(llm: Serialized, messages: BaseMessage[][], ...run: ModelRun): void {
    this.startModel(llm, messages.flat().map(storedMessage), ...run);
  }

  override handleLLMStart(llm: Serialized, prompts: string[], ...run: ModelRun): void {
    this.startModel(
      llm,
      prompts.map((prompt) => ({ role: 'user', content: prompt })),
      ...run,
    );
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const run = this.end(runId);
    if (!run?.llmCall) return;
    const generation = output.generations[0]?.[0] as Partial<ChatGeneration> | undefined;
    const message = generation?.message as
      (BaseMessage & { tool_calls?: Array<{ id?: string; name: string; args: unknown }>; usage_metadata?: UsageMetadata }) | undefined;
    const responseMetadata = (message?.response_metadata ?? {}) as Record<string, unknown>;
    // Chat models put usage on the message; completion LLMs (and older chat models) in llmOutput.
    const tokenUsage = (output.llmOutput?.tokenUsage ?? output.llmOutput?.estimatedTokenUsage ?? {}) as Record<string, unknown>;
    const inputTokens = numberOr(message?.usage_metadata?.input_tokens, numberOr(tokenUsage.promptTokens, 0));
    const outputTokens = numberOr(message?.usage_metadata?.output_tokens, numberOr(tokenUsage.completionTokens, 0));
    const toolCalls = message?.tool_calls ?? [];
    const answeredBy = responseMetadata.model_name ?? responseMetadata.model ?? output.llmOutput?.model_name;
    const call = run.llmCall;
    const response = {
      completion: generation?.text ?? '',
      usage: { inputTokens, outputTokens, ...usageDetails(message?.usage_metadata) } as { inputTokens: number; outputTokens: number },
      finishReason: String(generation?.generationInfo?.finish_reason ?? responseMetadata.finish_reason ?? responseMetadata.stop_reason ?? 'stop'),
      ...(toolCalls.length > 0 && { toolCalls: toolCalls.map(toolCallRecord) }),
      // The model that answered (a dated snapshot of the one asked for, say) is the one billed.
      ...(typeof answeredBy === 'string' && { model: answeredBy }),
    };
    recordSafely(() => run.session.recordLlmResponse(call, responseRecord(response, this.captureContent), { metadata: run.metadata }));
  }

  override handleLLMError(error: unknown, runId: string): void {
    const run = this.end(runId);
    const call = run?.llmCall;
    if (call) recordSafely(() => run.session.recordLlmError(call, error, { metadata: run.metadata }));
  }

  // ---------------------------------------------------------------------------------------------
  // Tools

  override handleToolStart(
    tool: Serialized,
    input: string,
    runId: string,
    parentRunId?: string,
    tags?: string[],
    _metadata?: Record<string, unknown>,
    name?: string,
    toolCallId?: string,
  ): void {
    const toolName = runName(tool, name);
    const run = this.begin(runId, parentRunId, toolName, tags, 'tool');
    if (!run) return;
    // LangChain hands the input over as JSON text (a tool called with a plain string stays one).
    const args = toolArguments(input);
    let finish!: (output: unknown) => void;
    let fail!: (error: unknown) => void;
    const outcome = new Promise<unknown>((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
    // wrapToolCall emits tool_call now, and tool_response / tool_error when the outcome settles.
    // It rejects with the tool's error, or with a recording failure (then warned about once, here).
    let ran = false;
    const recorded = run.session.wrapToolCall(
      toolName,
      args,
      () => {
        ran = true;
        return outcome;
      },
      { callId: toolCallId ?? runId, metadata: run.metadata },
    );
    if (!ran) {
      recorded.catch(warnRecordingFailed);
      this.runs.delete(runId);
      return;
    }
    run.tool = { finish, fail, recorded: recorded.catch(() => undefined) };
  }

  override async handleToolEnd(output: unknown, runId: string): Promise<void> {
    const run = this.end(runId);
    if (!run?.tool) return;
    // A tool called for a model's tool call answers a ToolMessage: its content is the result.
    const isToolMessage = typeof (output as { getType?: unknown } | null)?.getType === 'function' && (output as BaseMessage).getType() === 'tool';
    run.tool.finish(isToolMessage ? (output as BaseMessage).content : output);
    await run.tool.recorded;
  }

  override async handleToolError(error: unknown, runId: string): Promise<void> {
    const run = this.end(runId);
    if (!run?.tool) return;
    run.tool.fail(error);
    await run.tool.recorded;
  }

  // ---------------------------------------------------------------------------------------------
  // Chains

  // LangChain calls this with (…, runId, parentRunId, tags, metadata, runType, runName), not in
  // the order its own declaration names (…, runType, tags, metadata, runName, parentRunId).
  override handleChainStart(
    chain: Serialized,
    inputs: ChainValues,
    runId: string,
    parentRunId?: string,
    tags?: string[],
    _metadata?: Record<string, unknown>,
    _runType?: string,
    name?: string,
  ): void {
    const run = this.begin(runId, parentRunId, runName(chain, name), tags, 'chain');
    if (!run) return;
    recordSafely(() =>
      run.session.custom('chain_start', { name: run.name, ...(this.captureContent && { inputs: storable(inputs) }) }, { metadata: run.metadata }),
    );
  }

  override handleChainEnd(outputs: ChainValues, runId: string): void {
    const run = this.end(runId);
    if (!run) return;
    const data = { name: run.name, ...(this.captureContent && { outputs: storable(outputs) }), durationMs: performance.now() - run.startedAt };
    recordSafely(() => run.session.custom('chain_end', data, { metadata: run.metadata }));
  }

  override handleChainError(error: unknown, runId: string): void {
    const run = this.end(runId);
    if (!run) return;
    const data = { name: run.name, error: error instanceof Error ? error.message : String(error), durationMs: performance.now() - run.startedAt };
    recordSafely(() => run.session.custom('chain_error', data, { metadata: run.metadata, severity: 'error' }));
  }
}
