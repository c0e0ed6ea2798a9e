/*
 * Default model price table.
 *
 * Figures are list prices in USD per 1M tokens, standard tier: no batch, caching, priority or
 * long-context (>200k prompt) surcharges or discounts. Where a provider tiers by prompt length,
 * the base tier is listed. `asOf` is the date the figure is known to have been the published
 * list price on `source`. Prices change: operators override or extend this table through the
 * MODEL_PRICES configuration (see parsePriceOverrides), no release needed.
 */
import type { ModelPrice } from './index.ts';

const OPENAI = 'https://openai.com/api/pricing/';
const ANTHROPIC = 'https://www.anthropic.com/pricing#api';
const GOOGLE = 'https://ai.google.dev/gemini-api/docs/pricing';
const MISTRAL = 'https://mistral.ai/pricing#api-pricing';
const DEEPSEEK = 'https://api-docs.deepseek.com/quick_start/pricing';
const XAI = 'https://docs.x.ai/docs/models';
const COHERE = 'https://cohere.com/pricing';
const AMAZON = 'https://aws.amazon.com/bedrock/pricing/';

export const DEFAULT_PRICES: readonly ModelPrice[] = [
  { provider: 'openai', model: 'gpt-5', inputPerMillionUsd: 1.25, outputPerMillionUsd: 10, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-5-mini', inputPerMillionUsd: 0.25, outputPerMillionUsd: 2, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-5-nano', inputPerMillionUsd: 0.05, outputPerMillionUsd: 0.4, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4.1', inputPerMillionUsd: 2, outputPerMillionUsd: 8, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4.1-mini', inputPerMillionUsd: 0.4, outputPerMillionUsd: 1.6, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4.1-nano', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.4, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4o', inputPerMillionUsd: 2.5, outputPerMillionUsd: 10, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4o-mini', inputPerMillionUsd: 0.15, outputPerMillionUsd: 0.6, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'o3', inputPerMillionUsd: 2, outputPerMillionUsd: 8, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'o3-pro', inputPerMillionUsd: 20, outputPerMillionUsd: 80, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'o3-mini', inputPerMillionUsd: 1.1, outputPerMillionUsd: 4.4, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'o4-mini', inputPerMillionUsd: 1.1, outputPerMillionUsd: 4.4, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'o1', inputPerMillionUsd: 15, outputPerMillionUsd: 60, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'o1-mini', inputPerMillionUsd: 1.1, outputPerMillionUsd: 4.4, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4-turbo', inputPerMillionUsd: 10, outputPerMillionUsd: 30, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-4', inputPerMillionUsd: 30, outputPerMillionUsd: 60, source: OPENAI, asOf: '2025-08-07' },
  { provider: 'openai', model: 'gpt-3.5-turbo', inputPerMillionUsd: 0.5, outputPerMillionUsd: 1.5, source: OPENAI, asOf: '2025-08-07' },

  { provider: 'anthropic', model: 'claude-opus-4-5-20251101', inputPerMillionUsd: 5, outputPerMillionUsd: 25, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-opus-4-1-20250805', inputPerMillionUsd: 15, outputPerMillionUsd: 75, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-opus-4-20250514', inputPerMillionUsd: 15, outputPerMillionUsd: 75, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-sonnet-4-5-20250929', inputPerMillionUsd: 3, outputPerMillionUsd: 15, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-sonnet-4-20250514', inputPerMillionUsd: 3, outputPerMillionUsd: 15, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-3-7-sonnet-20250219', inputPerMillionUsd: 3, outputPerMillionUsd: 15, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-haiku-4-5-20251001', inputPerMillionUsd: 1, outputPerMillionUsd: 5, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-3-5-haiku-20241022', inputPerMillionUsd: 0.8, outputPerMillionUsd: 4, source: ANTHROPIC, asOf: '2025-11-24' },
  { provider: 'anthropic', model: 'claude-3-haiku-20240307', inputPerMillionUsd: 0.25, outputPerMillionUsd: 1.25, source: ANTHROPIC, asOf: '2025-11-24' },

  // Gemini 2.5 Pro and 3 Pro charge more above a 200k-token prompt; the base tier is listed.
  { provider: 'google', model: 'gemini-3-pro-preview', inputPerMillionUsd: 2, outputPerMillionUsd: 12, source: GOOGLE, asOf: '2025-11-18' },
  { provider: 'google', model: 'gemini-2.5-pro', inputPerMillionUsd: 1.25, outputPerMillionUsd: 10, source: GOOGLE, asOf: '2025-11-18' },
  { provider: 'google', model: 'gemini-2.5-flash', inputPerMillionUsd: 0.3, outputPerMillionUsd: 2.5, source: GOOGLE, asOf: '2025-11-18' },
  { provider: 'google', model: 'gemini-2.5-flash-lite', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.4, source: GOOGLE, asOf: '2025-11-18' },
  { provider: 'google', model: 'gemini-2.0-flash', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.4, source: GOOGLE, asOf: '2025-11-18' },
  { provider: 'google', model: 'gemini-2.0-flash-lite', inputPerMillionUsd: 0.075, outputPerMillionUsd: 0.3, source: GOOGLE, asOf: '2025-11-18' },

  { provider: 'mistral', model: 'mistral-large-latest', inputPerMillionUsd: 2, outputPerMillionUsd: 6, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'mistral-medium-latest', inputPerMillionUsd: 0.4, outputPerMillionUsd: 2, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'mistral-small-latest', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.3, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'magistral-medium-latest', inputPerMillionUsd: 2, outputPerMillionUsd: 5, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'magistral-small-latest', inputPerMillionUsd: 0.5, outputPerMillionUsd: 1.5, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'codestral-latest', inputPerMillionUsd: 0.3, outputPerMillionUsd: 0.9, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'devstral-medium-latest', inputPerMillionUsd: 0.4, outputPerMillionUsd: 2, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'devstral-small-latest', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.3, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'pixtral-large-latest', inputPerMillionUsd: 2, outputPerMillionUsd: 6, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'ministral-8b-latest', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.1, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'ministral-3b-latest', inputPerMillionUsd: 0.04, outputPerMillionUsd: 0.04, source: MISTRAL, asOf: '2025-07-15' },
  { provider: 'mistral', model: 'open-mistral-nemo', inputPerMillionUsd: 0.15, outputPerMillionUsd: 0.15, source: MISTRAL, asOf: '2025-07-15' },

  // Input price is the cache-miss price; DeepSeek bills both endpoints alike since V3.1.
  { provider: 'deepseek', model: 'deepseek-chat', inputPerMillionUsd: 0.28, outputPerMillionUsd: 0.42, source: DEEPSEEK, asOf: '2025-09-29' },
  { provider: 'deepseek', model: 'deepseek-reasoner', inputPerMillionUsd: 0.28, outputPerMillionUsd: 0.42, source: DEEPSEEK, asOf: '2025-09-29' },

  { provider: 'xai', model: 'grok-4', inputPerMillionUsd: 3, outputPerMillionUsd: 15, source: XAI, asOf: '2025-09-19' },
  { provider: 'xai', model: 'grok-4-fast-reasoning', inputPerMillionUsd: 0.2, outputPerMillionUsd: 0.5, source: XAI, asOf: '2025-09-19' },
  { provider: 'xai', model: 'grok-4-fast-non-reasoning', inputPerMillionUsd: 0.2, outputPerMillionUsd: 0.5, source: XAI, asOf: '2025-09-19' },
  { provider: 'xai', model: 'grok-code-fast-1', inputPerMillionUsd: 0.2, outputPerMillionUsd: 1.5, source: XAI, asOf: '2025-09-19' },
  { provider: 'xai', model: 'grok-3', inputPerMillionUsd: 3, outputPerMillionUsd: 15, source: XAI, asOf: '2025-09-19' },
  { provider: 'xai', model: 'grok-3-mini', inputPerMillionUsd: 0.3, outputPerMillionUsd: 0.5, source: XAI, asOf: '2025-09-19' },

  { provider: 'cohere', model: 'command-a-03-2025', inputPerMillionUsd: 2.5, outputPerMillionUsd: 10, source: COHERE, asOf: '2025-04-01' },
  { provider: 'cohere', model: 'command-r-plus-08-2024', inputPerMillionUsd: 2.5, outputPerMillionUsd: 10, source: COHERE, asOf: '2025-04-01' },
  { provider: 'cohere', model: 'command-r-08-2024', inputPerMillionUsd: 0.15, outputPerMillionUsd: 0.6, source: COHERE, asOf: '2025-04-01' },
  { provider: 'cohere', model: 'command-r7b-12-2024', inputPerMillionUsd: 0.0375, outputPerMillionUsd: 0.15, source: COHERE, asOf: '2025-04-01' },

  // Bedrock on-demand prices in us-east-1; other regions may differ.
  { provider: 'amazon', model: 'amazon.nova-premier-v1:0', inputPerMillionUsd: 2.5, outputPerMillionUsd: 12.5, source: AMAZON, asOf: '2025-05-01' },
  { provider: 'amazon', model: 'amazon.nova-pro-v1:0', inputPerMillionUsd: 0.8, outputPerMillionUsd: 3.2, source: AMAZON, asOf: '2025-05-01' },
  { provider: 'amazon', model: 'amazon.nova-lite-v1:0', inputPerMillionUsd: 0.06, outputPerMillionUsd: 0.24, source: AMAZON, asOf: '2025-05-01' },
  { provider: 'amazon', model: 'amazon.nova-micro-v1:0', inputPerMillionUsd: 0.035, outputPerMillionUsd: 0.14, source: AMAZON, asOf: '2025-05-01' },
];

/**
 * Short names SDKs and agents commonly report, mapped (lower-case) to the table id they bill as.
 * Only names the dated-suffix fallback cannot reach are listed: e.g. 'claude-sonnet-4-0' is not a
 * prefix of 'claude-sonnet-4-20250514', whereas 'gpt-4o-2024-08-06' already falls back to 'gpt-4o'.
 */
export const MODEL_ALIASES: Readonly<Record<string, string>> = {
  'claude-opus-4-5': 'claude-opus-4-5-20251101',
  'claude-opus-4-1': 'claude-opus-4-1-20250805',
  'claude-opus-4-0': 'claude-opus-4-20250514',
  'claude-sonnet-4-5': 'claude-sonnet-4-5-20250929',
  'claude-sonnet-4-0': 'claude-sonnet-4-20250514',
  'claude-3-7-sonnet-latest': 'claude-3-7-sonnet-20250219',
  'claude-haiku-4-5': 'claude-haiku-4-5-20251001',
  'claude-3-5-haiku-latest': 'claude-3-5-haiku-20241022',
  'gemini-flash-latest': 'gemini-2.5-flash',
  'gemini-flash-lite-latest': 'gemini-2.5-flash-lite',
  'nova-premier': 'amazon.nova-premier-v1:0',
  'nova-pro': 'amazon.nova-pro-v1:0',
  'nova-lite': 'amazon.nova-lite-v1:0',
  'nova-micro': 'amazon.nova-micro-v1:0',
};
