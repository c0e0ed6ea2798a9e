import { compareCodeUnits, DAY_MS } from '@vigil/platform';
import { aggregate, type Dimension } from '../analytics/index.ts';
import type { ObserveContext } from '../context.ts';
import { NANOS_PER_USD, nanosOf, roundUsd, usdOf, type ModelPrice, type PriceTable } from '@vigil/pricing';
import { COMPLEXITY_TIERS, type ComplexityTier } from '../events/index.ts';

export const CONFIDENCES = ['low', 'medium', 'high'] as const;
export type Confidence = (typeof CONFIDENCES)[number];

/** Fewer calls of an (agent, model, tier) than this are not enough to recommend anything. */
export const MIN_CALLS = 20;
/** A candidate whose observed success rate in the tier is below this is never recommended. */
export const MIN_SUCCESS_RATE = 0.98;
const HIGH_CONFIDENCE_ABOVE = 200;
const MEDIUM_CONFIDENCE_FROM = 50;
const DAYS_PER_MONTH = 30;

export interface RecommendationQuery {
  agentId?: string;
  /** Days back from now. */
  period: number;
  limit: number;
}

export interface Recommendation {
  currentModel: string;
  recommendedModel: string;
  complexityTier: ComplexityTier;
  currentCostPerCall: number;
  recommendedCostPerCall: number;
  monthlySavings: number;
  callVolume: number;
  currentSuccessRate: number;
  recommendedSuccessRate: number;
  confidence: Confidence;
  agentId: string;
}

export interface Recommendations {
  recommendations: Recommendation[];
  totalPotentialSavings: number;
  period: number;
  analyzedCalls: number;
}

/** Calls of one agent with one model in one tier, summed in SQL. */
interface CallGroup {
  agentId: string;
  provider: string;
  model: string;
  tier: ComplexityTier;
  calls: number;
  failures: number;
  /** Sum of costUsd (every llm_response carries one), in whole nano-dollars. */
  costNanos: number;
  inputTokens: number;
  outputTokens: number;
}

/** Observed outcomes of one model in one tier. */
interface Outcomes {
  calls: number;
  failures: number;
}

/** llm_response figures per the given dimensions, exact, from the analytics rollups. */
async function llmCalls(ctx: ObserveContext, from: number, to: number, agentId: string | undefined, dimensions: Dimension[]) {
  const rows = await aggregate(ctx.database, { from, to, agentId, dimensions, eventTypes: ['llm_response'] });
  return rows.filter((row) => row.provider !== '' && row.model !== '');
}

async function callGroups(ctx: ObserveContext, from: number, to: number, agentId: string | undefined): Promise<CallGroup[]> {
  return (await llmCalls(ctx, from, to, agentId, ['agent_id', 'provider', 'model', 'tier'])).map((row) => ({
    agentId: String(row.agent_id),
    provider: String(row.provider),
    model: String(row.model),
    tier: row.tier as ComplexityTier,
    calls: row.eventCount,
    failures: row.failureCount,
    costNanos: row.costNanos,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
  }));
}

/** Outcomes per (provider, model, tier) of every agent in the window. */
async function outcomeGroups(
  ctx: ObserveContext,
  from: number,
  to: number,
): Promise<{ provider: string; model: string; tier: ComplexityTier; outcomes: Outcomes }[]> {
  return (await llmCalls(ctx, from, to, undefined, ['provider', 'model', 'tier'])).map((row) => ({
    provider: String(row.provider),
    model: String(row.model),
    tier: row.tier as ComplexityTier,
    outcomes: { calls: row.eventCount, failures: row.failureCount },
  }));
}

const priceKey = (price: ModelPrice, tier: ComplexityTier): string => `${price.provider.toLowerCase()}\n${price.model.toLowerCase()}\n${tier}`;

/**
 * Observed outcomes per price-table model and tier: reported model names resolve through the
 * table (so 'gpt-4o-mini-2024-07-18' counts as 'gpt-4o-mini'); unpriced models are left out, as
 * they can never be recommended.
 */
function outcomesByPrice(
  prices: PriceTable,
  groups: readonly { provider: string; model: string; tier: ComplexityTier; outcomes: Outcomes }[],
): Map<string, Outcomes> {
  const byPrice = new Map<string, Outcomes>();
  for (const group of groups) {
    const price = prices.find(group.model, group.provider);
    if (!price) continue;
    const key = priceKey(price, group.tier);
    const sum = byPrice.get(key) ?? { calls: 0, failures: 0 };
    sum.calls += group.outcomes.calls;
    sum.failures += group.outcomes.failures;
    byPrice.set(key, sum);
  }
  return byPrice;
}

function confidenceOf(calls: number): Confidence {
  if (calls > HIGH_CONFIDENCE_ABOVE) return 'high';
  if (calls >= MEDIUM_CONFIDENCE_FROM) return 'medium';
  return 'low';
}

const successRate = (o: Outcomes): number => (o.calls - o.failures) / o.calls;

/** The recommendation for one group; undefined below MIN_CALLS or when no cheaper model qualifies. */
function recommend(prices: PriceTable, outcomes: ReadonlyMap<string, Outcomes>, group: CallGroup, period: number): Recommendation | undefined {
  if (group.calls < MIN_CALLS) return undefined;
  const meanInput = group.inputTokens / group.calls;
  const meanOutput = group.outputTokens / group.calls;
  const currentCost = group.costNanos / group.calls / NANOS_PER_USD;

  // Candidates that save money at this group's token mix and are not observed to fail too often.
  const qualifying: { price: ModelPrice; cost: number; observed?: Outcomes }[] = [];
  for (const candidate of prices.cheaperAlternatives(group.model, group.provider)) {
    const observed = outcomes.get(priceKey(candidate, group.tier));
    if (observed && successRate(observed) < MIN_SUCCESS_RATE) continue;
    const cost = (meanInput * candidate.inputPerMillionUsd + meanOutput * candidate.outputPerMillionUsd) / 1_000_000;
    if (cost < currentCost) qualifying.push({ price: candidate, cost, observed });
  }
  // Evidence first: a candidate observed in this tier beats a cheaper one never seen in it.
  const proven = qualifying.filter((c) => c.observed !== undefined);
  const pool = proven.length > 0 ? proven : qualifying;
  const best = pool.sort((a, b) => a.cost - b.cost || compareCodeUnits(a.price.model, b.price.model))[0];
  if (!best) return undefined;

  const currentSuccessRate = successRate(group);
  const savings = ((currentCost - best.cost) * group.calls * DAYS_PER_MONTH) / period;
  return {
    currentModel: group.model,
    recommendedModel: best.price.model,
    complexityTier: group.tier,
    currentCostPerCall: roundUsd(currentCost),
    recommendedCostPerCall: roundUsd(best.cost),
    monthlySavings: roundUsd(savings),
    callVolume: group.calls,
    currentSuccessRate,
    // Unknown (no call of the candidate in this tier): assumed equal to the current model's, and confidence is low.
    recommendedSuccessRate: best.observed ? successRate(best.observed) : currentSuccessRate,
    confidence: best.observed ? confidenceOf(group.calls) : 'low',
    agentId: group.agentId,
  };
}

const tierOrder = (tier: ComplexityTier): number => COMPLEXITY_TIERS.indexOf(tier);

/**
 * Model-switch recommendations over the llm_response events of the last `period` days (optionally
 * of one agent). Every call in the window is aggregated in SQL; the limit applies to the list only.
 */
export async function recommendations(ctx: ObserveContext, query: RecommendationQuery): Promise<Recommendations> {
  const to = ctx.clock.now();
  const from = to - query.period * DAY_MS;
  const groups = await callGroups(ctx, from, to, query.agentId);
  // Without an agent filter the groups already hold every call; with one, the candidates' evidence
  // still comes from every agent, so filtering never changes an agent's recommendations.
  const evidence =
    query.agentId === undefined
      ? groups.map((g) => ({ provider: g.provider, model: g.model, tier: g.tier, outcomes: { calls: g.calls, failures: g.failures } }))
      : await outcomeGroups(ctx, from, to);
  const outcomes = outcomesByPrice(ctx.prices, evidence);

  const all = groups
    .map((group) => recommend(ctx.prices, outcomes, group, query.period))
    // Savings that round to zero nano-dollars are no savings.
    .filter((r): r is Recommendation => r !== undefined && r.monthlySavings > 0)
    .sort(
      (a, b) =>
        b.monthlySavings - a.monthlySavings ||
        compareCodeUnits(a.currentModel, b.currentModel) ||
        compareCodeUnits(a.agentId, b.agentId) ||
        tierOrder(a.complexityTier) - tierOrder(b.complexityTier) ||
        compareCodeUnits(a.recommendedModel, b.recommendedModel),
    );
  const totalPotentialSavings = usdOf(all.reduce((sum, r) => sum + nanosOf(r.monthlySavings), 0));
  return {
    recommendations: all.slice(0, query.limit),
    totalPotentialSavings,
    period: query.period,
    analyzedCalls: groups.reduce((sum, g) => sum + g.calls, 0),
  };
}
