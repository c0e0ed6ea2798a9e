// LLM calls: the list of llm_response events (filters, sorts, keyset pages over partial indexes)
// and one call's detail with its prompt, completion and price.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerLlmCallRoutes } from './routes.ts';

export { createLlmCallIndexes } from './migrations.ts';

export const llmCallsFeature: ObserveFeature = defineFeature('llm-calls', ({ app, context }) => registerLlmCallRoutes(app, context));
