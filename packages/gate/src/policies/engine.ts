import { z } from 'zod';

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
    $in: z.array(z.union([z.string(), z.number().finite()])).max(1000).optional(),
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

/** What a request looks like to the engine. */
export interface EvaluatedRequest {
  action: string;
  status: string;
  urgency: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
}

export interface PolicyDecision {
  decision: Decision;
  policyId: string | null;
  policyName: string | null;
  ruleIndex: number | null;
  approvers: string[];
  channels: string[];
  requireReason: boolean;
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

/** Enabled policies only, ascending priority (ties by id, so the order is stable), compiled. */
export function compilePolicySet(policies: readonly PolicyDefinition[], isSafe: RegexSafety): CompiledPolicy[] {
  return policies
    .filter((p) => p.enabled)
    .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((p) => compilePolicy(p, isSafe));
}

/** Request fields, then params flattened on top: a params key named action/status/urgency shadows the field. */
function namespaceOf(request: EvaluatedRequest): Namespace {
  return {
    action: request.action,
    status: request.status,
    urgency: request.urgency,
    params: request.params,
    context: request.context,
    ...request.params,
  };
}

const ROUTE_TO_HUMAN: PolicyDecision = {
  decision: 'route_to_human',
  policyId: null,
  policyName: null,
  ruleIndex: null,
  approvers: [],
  channels: [],
  requireReason: false,
};

/** The first matching rule across policies in order decides; no match routes to a human. */
export function evaluatePolicies(policies: readonly CompiledPolicy[], request: EvaluatedRequest): PolicyDecision {
  const namespace = namespaceOf(request);
  for (const policy of policies) {
    for (const { index, test, rule } of policy.rules) {
      if (test(namespace)) {
        return {
          decision: rule.decision,
          policyId: policy.id,
          policyName: policy.name,
          ruleIndex: index,
          approvers: rule.approvers ?? [],
          channels: rule.channels ?? [],
          requireReason: rule.requireReason ?? false,
        };
      }
    }
  }
  return ROUTE_TO_HUMAN;
}
