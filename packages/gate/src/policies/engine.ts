import { canonicalJson } from '@vigil/platform';
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
/** A condition on a request: its namespace, and the values of the set's budget reads (BudgetReads) for it. */
type Predicate = (namespace: Namespace, budgets: readonly unknown[]) => boolean;

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

/** One rule in evaluation order, with the policy it belongs to and the decision it makes (one object, shared by every request it decides). */
interface OrderedRule {
  policy: CompiledPolicy;
  rule: CompiledRule;
  decision: PolicyDecision;
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
  /** The `budgets.<name>.<field>` values the rules read, each resolved once per evaluation (BudgetReads). */
  budgetReads: readonly (readonly [name: string, field: string])[];
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

type Lookup = (namespace: Namespace, budgets: readonly unknown[]) => unknown;

function field(value: unknown, segment: string): unknown {
  return value === null || typeof value !== 'object' || !Object.hasOwn(value, segment) ? MISSING : (value as Record<string, unknown>)[segment];
}

/**
 * The budget conditions of a policy set, each `budgets.<name>.<field>` given a slot: an evaluation
 * resolves every slot once, and a condition reads its slot. Many rules testing a few budgets then
 * cost one walk of each budget path per request, not one per rule.
 */
class BudgetReads {
  readonly reads: [name: string, field: string][] = [];
  private readonly slots = new Map<string, number>();

  slotOf(name: string, key: string): number {
    const id = `${name}\u0000${key}`;
    let slot = this.slots.get(id);
    if (slot === undefined) {
      slot = this.reads.push([name, key]) - 1;
      this.slots.set(id, slot);
    }
    return slot;
  }
}

const NO_BUDGET_VALUES: readonly unknown[] = Object.freeze([]);

/** The value of each budget read for one request's `budgets` (MISSING where it has none). */
function budgetValues(reads: CompiledPolicySet['budgetReads'], figures: unknown): readonly unknown[] {
  if (reads.length === 0) return NO_BUDGET_VALUES;
  const values = new Array<unknown>(reads.length);
  for (let slot = 0; slot < reads.length; slot++) values[slot] = field(field(figures, reads[slot]![0]), reads[slot]![1]);
  return values;
}

/** How a condition reads its field: a budget path from its slot, any other path walked in the namespace. */
function compileLookup(path: readonly string[], budgetReads: BudgetReads): Lookup {
  if (path.length === 3 && path[0] === 'budgets') {
    const slot = budgetReads.slotOf(path[1]!, path[2]!);
    return (_ns, budgets) => budgets[slot];
  }
  return (ns) => lookup(ns, path);
}

function compileMatcher(path: readonly string[], matcher: Matcher, isSafe: RegexSafety, budgetReads: BudgetReads): Predicate {
  const read = compileLookup(path, budgetReads);
  if (matcher === null) {
    // An exact null matches a null field or a missing one.
    return (ns, budgets) => {
      const value = read(ns, budgets);
      return value === null || value === MISSING;
    };
  }
  if (typeof matcher !== 'object') return (ns, budgets) => read(ns, budgets) === matcher;

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
  return (ns, budgets) => {
    const value = read(ns, budgets);
    if (value === MISSING) return false;
    for (const check of checks) if (!check(value)) return false;
    return true;
  };
}

function compilePolicy(policy: PolicyDefinition, isSafe: RegexSafety, budgetReads: BudgetReads): CompiledPolicy {
  return {
    id: policy.id,
    name: policy.name,
    priority: policy.priority,
    rules: policy.rules.map((rule, index) => {
      const predicates = Object.entries(rule.match).map(([path, matcher]) => compileMatcher(path.split('.'), matcher, isSafe, budgetReads));
      const test: Predicate = (ns, budgets) => {
        for (const predicate of predicates) if (!predicate(ns, budgets)) return false;
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
  const budgetReads = new BudgetReads();
  const compiled = policies
    .filter((p) => p.enabled)
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((p) => compilePolicy(p, isSafe, budgetReads));
  const ordered = compiled.flatMap((policy) => policy.rules.map((rule) => ({ policy, rule, decision: decisionOf(policy, rule) })));
  return { policies: compiled, ordered, ...buildIndexes(ordered), budgetReads: budgetReads.reads };
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

const ROUTE_TO_HUMAN: PolicyDecision = Object.freeze({
  decision: 'route_to_human',
  policyId: null,
  policyName: null,
  ruleIndex: null,
  approvers: [],
  channels: [],
  requireReason: false,
});

/**
 * The position of the first rule that matches, or -1. The rules that can match are the unindexed
 * ones and the request's bucket of each index, each list ascending and the lists disjoint (a rule
 * sits under one path, a lookup yields one value per path): they are merged lazily, in evaluation
 * order, so testing stops at the first match without sorting the rest.
 */
function firstMatch(set: CompiledPolicySet, namespace: Namespace): number {
  const budgets = budgetValues(set.budgetReads, namespace.budgets);
  const lists: (readonly number[])[] = [set.unindexed];
  for (const index of set.indexes) {
    const bucket = index.byValue.get(lookup(namespace, index.path));
    if (bucket) lists.push(bucket);
  }
  const heads = lists.map(() => 0);
  for (;;) {
    let next = -1;
    let from = -1;
    for (let l = 0; l < lists.length; l++) {
      const position = lists[l]![heads[l]!];
      if (position !== undefined && (next === -1 || position < next)) {
        next = position;
        from = l;
      }
    }
    if (next === -1) return -1;
    heads[from]!++;
    if (set.ordered[next]!.rule.test(namespace, budgets)) return next;
  }
}

/** What `rule` of `policy` decides. */
function decisionOf(policy: CompiledPolicy, { rule, index }: CompiledRule): PolicyDecision {
  return Object.freeze({
    decision: rule.decision,
    policyId: policy.id,
    policyName: policy.name,
    ruleIndex: index,
    approvers: rule.approvers ?? [],
    channels: rule.channels ?? [],
    requireReason: rule.requireReason ?? false,
    ...((rule.decision === 'route_to_human' || rule.decision === 'route_to_agent') && { onDeadline: rule.onDeadline ?? DEFAULT_DEADLINE_PLAN }),
    ...(rule.decision === 'route_to_human' && rule.quorum !== undefined && { quorum: rule.quorum }),
  });
}

/**
 * The first matching rule across policies in order decides; no match routes to a human. The
 * decision is the rule's own object, frozen (decisionOf): the same for every request it decides,
 * so its canonical text is written once (storedDecisionText).
 */
export function evaluatePolicies(set: CompiledPolicySet, request: EvaluatedRequest): PolicyDecision {
  const position = firstMatch(set, namespaceOf(request));
  return position === -1 ? ROUTE_TO_HUMAN : set.ordered[position]!.decision;
}

const decisionTexts = new WeakMap<PolicyDecision, string>();

/**
 * A decision as the request row stores it (RFC 8785 canonical JSON), kept per decision object: the
 * engine's decisions are frozen and shared (evaluatePolicies), so a rule's text is written once.
 */
export function storedDecisionText(decision: PolicyDecision): string {
  let text = decisionTexts.get(decision);
  if (text === undefined) {
    text = canonicalJson(decision);
    if (Object.isFrozen(decision)) decisionTexts.set(decision, text);
  }
  return text;
}
