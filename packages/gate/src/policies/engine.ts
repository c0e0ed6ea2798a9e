import { z } from 'zod';
import { quorumSchema, type Quorum } from '../approvers/index.ts';
import { DEFAULT_DEADLINE_PLAN, deadlinePlanSchema, type DeadlinePlan } from '../escalation/index.ts';

/**
 * The policy engine: pure functions. Policies are compiled once (paths split, regexes built,
 * operators turned into closures) and evaluated many times without allocation beyond the
 * request's field namespace.
 */

export const DECISIONS = ['auto_approve', 'auto_deny', 'route_to_human', 'route_to_agent'] as const;
export type Decision = (typeof DECISIONS)[number];

const OPERATORS = ['$lt', '$gt', '$lte', '$gte', '$in', '$regex'] as const;

const exactValue = z.union([z.string(), z.number().finite(), z.boolean(), z.null()]);
const operatorMatcher = z
  .object({
    $lt: z.number().finite().optional(),
    $gt: z.number().finite().optional(),
    $lte: z.number().finite().optional(),
    $gte: z.number().finite().optional(),
    $in: z
      .array(z.union([z.string(), z.number().finite()]))
      .max(1000)
      .optional(),
    $regex: z.string().min(1).max(1000).optional(),
  })
  .strict()
  .refine((m) => OPERATORS.some((op) => m[op] !== undefined), { message: 'a matcher object needs at least one of $lt, $gt, $lte, $gte, $in, $regex' });

export const matcherSchema = z.union([exactValue, operatorMatcher]);
export type Matcher = z.infer<typeof matcherSchema>;

export const ruleSchema = z
  .object({
    match: z.record(z.string().min(1).max(200), matcherSchema),
    decision: z.enum(DECISIONS),
    approvers: z.array(z.string().min(1).max(200)).max(100).optional(),
    channels: z.array(z.string().min(1).max(200)).max(100).optional(),
    requireReason: z.boolean().optional(),
    /** What happens at the deadline of a request this rule routes (escalation/plan.ts); default DEFAULT_DEADLINE_PLAN. */
    onDeadline: deadlinePlanSchema.optional(),
    /** Approvals from distinct deciders the request needs (approvers/); default one decision settles it. */
    quorum: quorumSchema.optional(),
  })
  .strict();
export type Rule = z.infer<typeof ruleSchema>;

export interface PolicyDefinition {
  id: string;
  name: string;
  priority: number;
  enabled: boolean;
  rules: Rule[];
}

/** How urgent a request is: set by its creator, matched by policy conditions like any field. */
export const URGENCIES = ['low', 'normal', 'high', 'critical'] as const;
export type Urgency = (typeof URGENCIES)[number];

/** What a request looks like to the engine. */
export interface EvaluatedRequest {
  action: string;
  status: string;
  urgency: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  /** The budgets covering the request, by name (budgets/): matched as `budgets.<name>.spendUsd`, `.level`. */
  budget?: Record<string, unknown>;
}

export interface PolicyDecision {
  decision: Decision;
  policyId: string | null;
  policyName: string | null;
  ruleIndex: number | null;
  approvers: string[];
  channels: string[];
  requireReason: boolean;
  /** For a request a rule routes: what happens at its deadline (escalation/). */
  onDeadline?: DeadlinePlan;
  /** For a request a rule routes to a human: the approvals it needs (approvers/). */
  quorum?: Quorum;
}

type Namespace = Record<string, unknown>;
type Predicate = (namespace: Namespace) => boolean;

interface CompiledRule {
  index: number;
  test: Predicate;
  rule: Rule;
}

export interface CompiledPolicy {
  id: string;
  name: string;
  priority: number;
  rules: CompiledRule[];
}

/** One rule in evaluation order, with the policy it belongs to. */
interface OrderedRule {
  policy: CompiledPolicy;
  rule: CompiledRule;
}

/** Rules that require `path` to equal one of a few values, bucketed by that value. */
interface EqualityIndex {
  path: readonly string[];
  byValue: Map<unknown, number[]>;
}

/**
 * The enabled policies in order, plus an index that narrows each request to the rules that can
 * match it. Every rule with an exact or `$in` matcher is filed under its most selective one (the
 * path/value pair fewest rules share); a request then looks its value up once per indexed path,
 * and only those buckets plus the rules without any such matcher are tested, in the original order.
 */
export interface CompiledPolicySet {
  policies: CompiledPolicy[];
  ordered: OrderedRule[];
  unindexed: number[];
  indexes: EqualityIndex[];
}

/** Decides whether a regex may be used; unsafe (or unjudgeable) patterns never match. */
export type RegexSafety = (pattern: string) => boolean;

const MISSING = Symbol('missing');

function lookup(namespace: Namespace, path: readonly string[]): unknown {
  let value: unknown = namespace;
  for (const segment of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return MISSING;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

function compileMatcher(path: readonly string[], matcher: Matcher, isSafe: RegexSafety): Predicate {
  if (matcher === null) {
    // An exact null matches a null field or a missing one.
    return (ns) => {
      const value = lookup(ns, path);
      return value === null || value === MISSING;
    };
  }
  if (typeof matcher !== 'object') return (ns) => lookup(ns, path) === matcher;

  const checks: ((value: unknown) => boolean)[] = [];
  const { $lt, $gt, $lte, $gte, $in, $regex } = matcher;
  if ($lt !== undefined) checks.push((v) => typeof v === 'number' && v < $lt);
  if ($gt !== undefined) checks.push((v) => typeof v === 'number' && v > $gt);
  if ($lte !== undefined) checks.push((v) => typeof v === 'number' && v <= $lte);
  if ($gte !== undefined) checks.push((v) => typeof v === 'number' && v >= $gte);
  if ($in !== undefined) {
    const allowed = new Set<unknown>($in);
    checks.push((v) => (typeof v === 'string' || typeof v === 'number') && allowed.has(v));
  }
  if ($regex !== undefined) {
    const regex = isSafe($regex) ? new RegExp($regex) : null;
    checks.push(regex ? (v) => typeof v === 'string' && regex.test(v) : () => false);
  }
  return (ns) => {
    const value = lookup(ns, path);
    if (value === MISSING) return false;
    for (const check of checks) if (!check(value)) return false;
    return true;
  };
}

export function compilePolicy(policy: PolicyDefinition, isSafe: RegexSafety): CompiledPolicy {
  return {
    id: policy.id,
    name: policy.name,
    priority: policy.priority,
    rules: policy.rules.map((rule, index) => {
      const predicates = Object.entries(rule.match).map(([path, matcher]) => compileMatcher(path.split('.'), matcher, isSafe));
      const test: Predicate = (ns) => {
        for (const predicate of predicates) if (!predicate(ns)) return false;
        return true;
      };
      return { index, test, rule };
    }),
  };
}

/**
 * The values a matcher requires its field to equal, or null when it accepts others too. Exact
 * null is left out: it also matches a missing field, which no lookup value stands for.
 */
function requiredValues(matcher: Matcher): readonly (string | number | boolean)[] | null {
  if (matcher === null) return null;
  if (typeof matcher !== 'object') return [matcher];
  return matcher.$in ?? null;
}

function buildIndexes(ordered: readonly OrderedRule[]): Pick<CompiledPolicySet, 'unindexed' | 'indexes'> {
  const shared = new Map<string, number>();
  const pairKey = (path: string, value: unknown): string => JSON.stringify([path, value]);
  for (const { rule } of ordered) {
    for (const [path, matcher] of Object.entries(rule.rule.match)) {
      for (const value of requiredValues(matcher) ?? []) shared.set(pairKey(path, value), (shared.get(pairKey(path, value)) ?? 0) + 1);
    }
  }
  const unindexed: number[] = [];
  const byPath = new Map<string, EqualityIndex>();
  ordered.forEach(({ rule }, position) => {
    let best: { path: string; values: readonly (string | number | boolean)[]; cost: number } | null = null;
    for (const [path, matcher] of Object.entries(rule.rule.match)) {
      const values = requiredValues(matcher);
      if (!values) continue;
      const cost = values.reduce<number>((sum, value) => sum + shared.get(pairKey(path, value))!, 0);
      if (!best || cost < best.cost) best = { path, values, cost };
    }
    if (!best) {
      unindexed.push(position);
      return;
    }
    let index = byPath.get(best.path);
    if (!index) byPath.set(best.path, (index = { path: best.path.split('.'), byValue: new Map() }));
    for (const value of new Set(best.values)) {
      const bucket = index.byValue.get(value);
      if (bucket) bucket.push(position);
      else index.byValue.set(value, [position]);
    }
  });
  return { unindexed, indexes: [...byPath.values()] };
}

/** Enabled policies only, ascending priority (ties by id, so the order is stable), compiled and indexed. */
export function compilePolicySet(policies: readonly PolicyDefinition[], isSafe: RegexSafety): CompiledPolicySet {
  const compiled = policies
    .filter((p) => p.enabled)
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((p) => compilePolicy(p, isSafe));
  const ordered = compiled.flatMap((policy) => policy.rules.map((rule) => ({ policy, rule })));
  return { policies: compiled, ordered, ...buildIndexes(ordered) };
}

/**
 * Request fields, then params flattened on top: a params key named action/status/urgency shadows the
 * field. `budgets` comes last, so no param can stand in for the spend the gate read.
 */
function namespaceOf(request: EvaluatedRequest): Namespace {
  return {
    action: request.action,
    status: request.status,
    urgency: request.urgency,
    params: request.params,
    context: request.context,
    ...request.params,
    budgets: request.budget ?? EMPTY_BUDGETS,
  };
}

const EMPTY_BUDGETS: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

const ROUTE_TO_HUMAN: PolicyDecision = {
  decision: 'route_to_human',
  policyId: null,
  policyName: null,
  ruleIndex: null,
  approvers: [],
  channels: [],
  requireReason: false,
};

/** Positions of the rules that can match, ascending (evaluation order). */
function candidates(set: CompiledPolicySet, namespace: Namespace): readonly number[] {
  let merged: number[] | null = null;
  for (const index of set.indexes) {
    const bucket = index.byValue.get(lookup(namespace, index.path));
    if (bucket) (merged ??= [...set.unindexed]).push(...bucket);
  }
  // Buckets are disjoint (a rule sits under one path, and a lookup yields one value per path).
  return merged ? merged.sort((a, b) => a - b) : set.unindexed;
}

/** The first matching rule across policies in order decides; no match routes to a human. */
export function evaluatePolicies(set: CompiledPolicySet, request: EvaluatedRequest): PolicyDecision {
  const namespace = namespaceOf(request);
  for (const position of candidates(set, namespace)) {
    const { policy, rule: compiled } = set.ordered[position]!;
    if (!compiled.test(namespace)) continue;
    const { rule, index } = compiled;
    return {
      decision: rule.decision,
      policyId: policy.id,
      policyName: policy.name,
      ruleIndex: index,
      approvers: rule.approvers ?? [],
      channels: rule.channels ?? [],
      requireReason: rule.requireReason ?? false,
      ...((rule.decision === 'route_to_human' || rule.decision === 'route_to_agent') && { onDeadline: rule.onDeadline ?? DEFAULT_DEADLINE_PLAN }),
      ...(rule.decision === 'route_to_human' && rule.quorum !== undefined && { quorum: rule.quorum }),
    };
  }
  return ROUTE_TO_HUMAN;
}
