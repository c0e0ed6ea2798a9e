import { isoTimestampMs } from '@vigil/platform';
import { z } from 'zod';
import { MAX_OFFSET } from '../bounds.ts';
import { identifier } from '../events/index.ts';
import { BENCHMARK_METRICS, type BenchmarkMetric } from './statistics.ts';

export const BENCHMARK_STATUSES = ['draft', 'running', 'completed', 'cancelled'] as const;
export type BenchmarkStatus = (typeof BENCHMARK_STATUSES)[number];

export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 10;
export const DEFAULT_MIN_SESSIONS_PER_VARIANT = 10;
export const MAX_MIN_SESSIONS_PER_VARIANT = 1_000_000;
export const MAX_NAME_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 2000;
/** Session tags are 1 to 200 characters (events/schemas.ts), so a variant tag is too. */
export const MAX_TAG_LENGTH = 200;

const name = (what: string) =>
  z
    .string({ error: `${what} is required (1 to ${MAX_NAME_LENGTH} characters)` })
    .trim()
    .min(1, `${what} must be 1 to ${MAX_NAME_LENGTH} characters`)
    .max(MAX_NAME_LENGTH, `${what} must be 1 to ${MAX_NAME_LENGTH} characters`);
const description = z.string().max(MAX_DESCRIPTION_LENGTH, `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
/** Matched exactly against session tags (not trimmed). */
const tag = z
  .string({ error: `tag is required (1 to ${MAX_TAG_LENGTH} characters)` })
  .min(1, `tag must be 1 to ${MAX_TAG_LENGTH} characters`)
  .max(MAX_TAG_LENGTH, `tag must be 1 to ${MAX_TAG_LENGTH} characters`);

const METRIC_LIST = BENCHMARK_METRICS.join(', ');
const metric = z.string().transform((value, ctx) => {
  if ((BENCHMARK_METRICS as readonly string[]).includes(value)) return value as BenchmarkMetric;
  ctx.addIssue({
    code: 'custom',
    message:
      value === 'health_score'
        ? `health_score cannot be benchmarked (it is an agent-level score, not a per-session value); valid metrics: ${METRIC_LIST}`
        : `unknown metric ${JSON.stringify(value)}; valid metrics: ${METRIC_LIST}`,
  });
  return z.NEVER;
});

export const variantInputSchema = z.strictObject({
  name: name('variant name'),
  tag,
  description: description.optional(),
  agentId: identifier.optional(),
});

export const timeRangeInputSchema = z.strictObject({ from: isoTimestampMs.optional(), to: isoTimestampMs.optional() }).superRefine((range, ctx) => {
  if (range.from === undefined && range.to === undefined) {
    ctx.addIssue({ code: 'custom', message: 'timeRange needs from, to or both' });
  } else if (range.from !== undefined && range.to !== undefined && range.from > range.to) {
    ctx.addIssue({ code: 'custom', path: ['from'], message: 'timeRange.from must not be after timeRange.to' });
  }
});

/** POST /api/benchmarks body; unknown keys are refused. */
export const createBenchmarkBodySchema = z
  .strictObject({
    name: name('name'),
    description: description.optional(),
    agentId: identifier.optional(),
    variants: z
      .array(variantInputSchema, { error: `variants is required (${MIN_VARIANTS} to ${MAX_VARIANTS} entries)` })
      .min(MIN_VARIANTS, `variants must hold ${MIN_VARIANTS} to ${MAX_VARIANTS} entries`)
      .max(MAX_VARIANTS, `variants must hold ${MIN_VARIANTS} to ${MAX_VARIANTS} entries`),
    metrics: z.array(metric).min(1, `metrics must list at least one of: ${METRIC_LIST} (omit it for all)`).optional(),
    minSessionsPerVariant: z
      .number()
      .int('minSessionsPerVariant must be a whole number')
      .min(1, 'minSessionsPerVariant must be at least 1')
      .max(MAX_MIN_SESSIONS_PER_VARIANT, `minSessionsPerVariant must be at most ${MAX_MIN_SESSIONS_PER_VARIANT}`)
      .default(DEFAULT_MIN_SESSIONS_PER_VARIANT),
    timeRange: timeRangeInputSchema.optional(),
  })
  .superRefine((body, ctx) => {
    // A tag identifies one variant, and the winner is named by variant name: both are unique.
    const tags = body.variants.map((v) => v.tag);
    const names = body.variants.map((v) => v.name);
    body.variants.forEach((variant, index) => {
      if (tags.indexOf(variant.tag) !== index) {
        ctx.addIssue({ code: 'custom', path: ['variants', index, 'tag'], message: 'tag is already used by another variant' });
      }
      if (names.indexOf(variant.name) !== index) {
        ctx.addIssue({ code: 'custom', path: ['variants', index, 'name'], message: 'name is already used by another variant' });
      }
    });
    const metrics = body.metrics ?? [];
    metrics.forEach((m, index) => {
      if (metrics.indexOf(m) !== index) ctx.addIssue({ code: 'custom', path: ['metrics', index], message: `${m} is listed twice` });
    });
  });
export type CreateBenchmarkBody = z.infer<typeof createBenchmarkBodySchema>;

export const statusBodySchema = z.strictObject({
  status: z.enum(BENCHMARK_STATUSES, { error: `status must be one of: ${BENCHMARK_STATUSES.join(', ')}` }),
});

export const benchmarkParams = z.object({ id: identifier });

export const listBenchmarksQuerySchema = z.object({
  status: z.enum(BENCHMARK_STATUSES, { error: `status must be one of: ${BENCHMARK_STATUSES.join(', ')}` }).optional(),
  agentId: identifier.optional(),
  limit: z.coerce.number().int().min(1, 'limit must be 1 to 100').max(100, 'limit must be 1 to 100').default(20),
  offset: z.coerce.number().int().min(0, 'offset must be >= 0').max(MAX_OFFSET).default(0),
});
export type ListBenchmarksQuery = z.infer<typeof listBenchmarksQuerySchema>;

export const resultsQuerySchema = z.object({
  includeDistributions: z
    .enum(['true', 'false'], { error: 'includeDistributions must be true or false' })
    .default('false')
    .transform((v) => v === 'true'),
});

// ---- responses (documentation; responses are serialised as built) ----

const variantSummarySchema = z.object({ id: z.string(), name: z.string(), tag: z.string() });

export const variantSchema = variantSummarySchema.extend({
  description: z.string().nullable(),
  agentId: z.string().nullable(),
  sessionCount: z.number().int(),
});

const metricEnum = z.enum(BENCHMARK_METRICS);

export const benchmarkSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    agentId: z.string().nullable(),
    status: z.enum(BENCHMARK_STATUSES),
    variants: z.array(variantSchema),
    metrics: z.array(metricEnum),
    minSessionsPerVariant: z.number().int(),
    timeRange: z.object({ from: z.string().nullable(), to: z.string().nullable() }).nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Benchmark' });
export type BenchmarkOut = z.infer<typeof benchmarkSchema>;

export const benchmarkListItemSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    status: z.enum(BENCHMARK_STATUSES),
    agentId: z.string().nullable(),
    metrics: z.array(metricEnum),
    variants: z.array(variantSummarySchema),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'BenchmarkListItem' });
export type BenchmarkListItemOut = z.infer<typeof benchmarkListItemSchema>;

export const benchmarkListSchema = z.object({ benchmarks: z.array(benchmarkListItemSchema), total: z.number().int(), hasMore: z.boolean() });

const descriptionSchema = z.object({
  mean: z.number().nullable(),
  median: z.number().nullable(),
  stddev: z.number().nullable(),
  min: z.number().nullable(),
  max: z.number().nullable(),
  count: z.number().int(),
});

const comparisonSideSchema = z.object({
  id: z.string(),
  name: z.string(),
  stats: descriptionSchema.extend({
    rate: z.number().nullable().optional(),
    numerator: z.number().int().optional(),
    denominator: z.number().int().optional(),
  }),
});

export const resultsSchema = z
  .object({
    benchmarkId: z.string(),
    tenantId: z.string(),
    status: z.enum(BENCHMARK_STATUSES),
    minSessionsPerVariant: z.number().int(),
    belowMinimum: z.boolean(),
    variants: z.array(
      z.object({
        variantId: z.string(),
        variantName: z.string(),
        tag: z.string(),
        sessionCount: z.number().int(),
        belowMinimum: z.boolean(),
        metrics: z.record(z.string(), descriptionSchema),
        distributions: z.record(z.string(), z.array(z.number())).optional(),
      }),
    ),
    comparisons: z.array(
      z.object({
        metric: metricEnum,
        variantA: comparisonSideSchema,
        variantB: comparisonSideSchema,
        absoluteDiff: z.number().nullable(),
        percentDiff: z.number().nullable(),
        testType: z.enum(['welch_t', 'chi_squared']),
        testStatistic: z.number().nullable(),
        pValue: z.number(),
        confidenceInterval: z.object({ lower: z.number(), upper: z.number() }).nullable(),
        effectSize: z.number().nullable(),
        significant: z.boolean(),
        winner: z.string().optional(),
        confidence: z.enum(['***', '**', '*', '-']),
        belowMinimum: z.boolean(),
        degenerate: z.enum(['insufficient_data', 'zero_variance', 'no_variation']).nullable(),
      }),
    ),
    summary: z.string(),
    computedAt: z.string(),
  })
  .meta({ id: 'BenchmarkResults' });
