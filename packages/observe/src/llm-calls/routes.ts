import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier } from '../events/index.ts';
import { listLlmCallsQuerySchema, llmCallDetailSchema, llmCallPageSchema } from './schemas.ts';
import { llmCallDetail } from './service.ts';
import { listLlmCalls } from './store.ts';

export function registerLlmCallRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/llm-calls',
    routeOptions('read', {
      operationId: 'listLlmCalls',
      summary: 'List LLM calls (llm_response events)',
      description:
        "Filters combine. `status`: error when the response is an error event (severity error or critical). Sorted by `sort` then id, in `order`; pages by cursor: pass `nextCursor` as `cursor` (with the same sort) until it is null. Only figures are listed: the prompt and completion are in the call's detail.",
      tags: ['analytics'],
      querystring: listLlmCallsQuerySchema,
      response: { 200: llmCallPageSchema },
    }),
    async (request) => listLlmCalls(ctx.database.db, request.query),
  );

  app.get(
    '/api/llm-calls/:id',
    routeOptions('read', {
      operationId: 'getLlmCall',
      summary: 'One LLM call: its prompt, completion, tokens, cost and the price of its model',
      description:
        "`prompt` is the llm_call event of the same session and callId. `costUsd` is what the agent recorded; `price` is the price table's entry for the model (built-in or MODEL_PRICES) and `costAtPriceUsd` the call's tokens at it. Erased or crypto-shredded content is reported as such (`content`, `promptContent`), never shown.",
      tags: ['analytics'],
      params: z.object({ id: identifier }),
      response: { 200: llmCallDetailSchema },
    }),
    async (request) => {
      const detail = await llmCallDetail(ctx, request.params.id);
      if (!detail) throw observeError('llmCallNotFound');
      return detail;
    },
  );
}
