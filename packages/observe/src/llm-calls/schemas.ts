import { z } from 'zod';
import { identifier } from '../events/index.ts';

export const LLM_CALL_SORTS = ['time', 'cost', 'latency', 'tokens'] as const;
export type LlmCallSort = (typeof LLM_CALL_SORTS)[number];
export const LLM_CALL_STATUSES = ['success', 'error'] as const;

/** The key of a page's last row: its sort, the sort value and the id (base64url JSON, opaque to clients). */
export interface LlmCallCursor {
  sort: LlmCallSort;
  value: number;
  id: string;
}

export const encodeCursor = (cursor: LlmCallCursor): string => Buffer.from(JSON.stringify([cursor.sort, cursor.value, cursor.id])).toString('base64url');

const cursorSchema = z
  .string()
  .max(2000)
  .transform((text, ctx): LlmCallCursor => {
    try {
      const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
      if (
        Array.isArray(value) &&
        value.length === 3 &&
        (LLM_CALL_SORTS as readonly unknown[]).includes(value[0]) &&
        typeof value[1] === 'number' &&
        Number.isFinite(value[1]) &&
        typeof value[2] === 'string' &&
        value[2].length <= 256
      ) {
        return { sort: value[0] as LlmCallSort, value: value[1], id: value[2] };
      }
    } catch {
      // Not JSON: reported below like any other foreign cursor.
    }
    ctx.addIssue({ code: 'custom', message: 'cursor is not one this endpoint issued; pass nextCursor unchanged' });
    return z.NEVER;
  })
  .meta({ type: 'string' });

export const listLlmCallsQuerySchema = z
  .object({
    model: z.string().min(1).max(200).optional(),
    agentId: identifier.optional(),
    sessionId: identifier.optional(),
    status: z.enum(LLM_CALL_STATUSES).optional(),
    sort: z.enum(LLM_CALL_SORTS).default('time').describe('time: the timestamp; tokens: input plus output'),
    order: z.enum(['asc', 'desc']).default('desc'),
    cursor: cursorSchema.optional().describe('nextCursor of the previous page, with the same sort; absent for the first'),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .superRefine((query, ctx) => {
    if (query.cursor !== undefined && query.cursor.sort !== query.sort) {
      ctx.addIssue({ code: 'custom', path: ['cursor'], message: `cursor belongs to sort=${query.cursor.sort}; pass it with that sort` });
    }
  });
export type ListLlmCallsQuery = z.infer<typeof listLlmCallsQuerySchema>;

export const llmCallSchema = z
  .object({
    id: z.string(),
    timestamp: z.string(),
    sessionId: z.string(),
    agentId: z.string(),
    provider: z.string().nullable(),
    model: z.string().nullable(),
    status: z.enum(LLM_CALL_STATUSES),
    finishReason: z.string().nullable(),
    inputTokens: z.number().nullable(),
    outputTokens: z.number().nullable(),
    totalTokens: z.number(),
    costUsd: z.number().nullable(),
    latencyMs: z.number().nullable(),
  })
  .meta({ id: 'LlmCall' });
export type LlmCall = z.infer<typeof llmCallSchema>;

export const llmCallPageSchema = z.object({ calls: z.array(llmCallSchema), nextCursor: z.string().nullable() });

const priceSchema = z
  .object({
    provider: z.string(),
    model: z.string(),
    inputPerMillionUsd: z.number(),
    outputPerMillionUsd: z.number(),
    source: z.string().describe("a pricing page's URL, or 'configuration' (MODEL_PRICES)"),
    asOf: z.string(),
    costAtPriceUsd: z.number().describe("the call's tokens at this price (costUsd is what the agent recorded)"),
  })
  .meta({ id: 'LlmCallPrice' });

export const llmCallDetailSchema = llmCallSchema
  .extend({
    content: z
      .enum(['readable', 'erased', 'sealed'])
      .describe('erased: replaced by an erasure marker; sealed: its data key is destroyed. prompt and completion are then null'),
    erasureId: z.string().nullable(),
    callId: z.string().nullable(),
    promptContent: z
      .enum(['readable', 'erased', 'sealed', 'missing'])
      .describe('the same for the llm_call event of the prompt; missing: no llm_call of that session and callId'),
    prompt: z
      .object({ systemPrompt: z.string().nullable(), messages: z.array(z.unknown()), eventId: z.string() })
      .nullable()
      .describe('the llm_call event of the same session and callId; null when there is none or its content is not readable'),
    completion: z.unknown(),
    toolCalls: z.array(z.unknown()),
    price: priceSchema.nullable().describe('the price table entry of the model (null when it has none)'),
  })
  .meta({ id: 'LlmCallDetail' });
export type LlmCallDetail = z.infer<typeof llmCallDetailSchema>;
