import { SEVERITIES } from '../events/index.ts';
import type { ComplianceRule, Severity, Violation } from './schemas.ts';

/**
 * Pure rule logic of compliance evaluations. The store aggregates a session in SQL into
 * `SessionFacts` (every tool called and how often, events per severity, tracked spend); these
 * functions turn facts and rules into a verdict. Re-running them over the same facts gives the
 * same verdict, which is what makes the method `deterministic`.
 */

export interface SessionFacts {
  /** Distinct tool names of the session's tool_call events with their call counts, sorted by name. */
  toolCalls: readonly { tool: string; calls: number }[];
  /** Events per severity (eval_result events excluded: a verdict never judges another verdict). */
  severityCounts: Readonly<Partial<Record<Severity, number>>>;
  /** The one definition of spend: costUsd of llm_response and cost_tracked events, to the nano-dollar. */
  spendUsd: number;
}

export interface ComplianceVerdict {
  score: number;
  passed: boolean;
  reasoning: string;
  violations: Violation[];
  rulesEvaluated: number;
}

/** debug < info < warn < error < critical. */
export const severityRank = (severity: Severity): number => SEVERITIES.indexOf(severity);

/**
 * A tool pattern as a predicate. A leading `*` matches any prefix and a trailing `*` any suffix
 * (`db.*`, `*_delete`, `*shell*`; `*` alone matches every tool); otherwise the name must be equal.
 * Matching is case-sensitive, like tool names.
 */
export function toolMatcher(pattern: string): (tool: string) => boolean {
  const leading = pattern.startsWith('*');
  const trailing = pattern.length > 1 && pattern.endsWith('*');
  const core = pattern.slice(leading ? 1 : 0, trailing ? -1 : undefined);
  if (leading && trailing) return (tool) => tool.includes(core);
  if (leading) return (tool) => tool.endsWith(core);
  if (trailing) return (tool) => tool.startsWith(core);
  return (tool) => tool === core;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
const listTools = (entries: readonly { tool: string; calls: number }[]): string => entries.map((e) => `${e.tool} (${plural(e.calls, 'call')})`).join(', ');

/** The violation of one rule by the facts, or null when the rule holds. */
export function checkRule(rule: ComplianceRule, facts: SessionFacts): Violation | null {
  const violation = (detail: string): Violation => ({ ruleId: rule.id, ruleType: rule.type, detail });
  switch (rule.type) {
    case 'tool_denylist': {
      const matchers = rule.tools.map(toolMatcher);
      const denied = facts.toolCalls.filter((entry) => matchers.some((matches) => matches(entry.tool)));
      return denied.length === 0 ? null : violation(`called denied tools: ${listTools(denied)}`);
    }
    case 'tool_allowlist': {
      const matchers = rule.tools.map(toolMatcher);
      const outside = facts.toolCalls.filter((entry) => !matchers.some((matches) => matches(entry.tool)));
      return outside.length === 0 ? null : violation(`called tools outside the allowlist: ${listTools(outside)}`);
    }
    case 'max_cost':
      // Strictly above: a session that spent exactly maxUsd complies.
      return facts.spendUsd > rule.maxUsd ? violation(`tracked spend ${facts.spendUsd} USD exceeds maxUsd ${rule.maxUsd} USD`) : null;
    case 'no_severity_above': {
      const limit = severityRank(rule.severity);
      const above = SEVERITIES.filter((s) => severityRank(s) > limit && (facts.severityCounts[s] ?? 0) > 0);
      if (above.length === 0) return null;
      const total = above.reduce((sum, s) => sum + (facts.severityCounts[s] ?? 0), 0);
      return violation(`${plural(total, 'event')} above ${rule.severity}: ${above.map((s) => `${s} ×${facts.severityCounts[s]}`).join(', ')}`);
    }
  }
}

/**
 * The verdict of a rule set. score = rules passed / rules evaluated. With a passThreshold the
 * evaluation passes when score >= passThreshold (inclusive); without one any violation fails it.
 */
export function evaluateRules(rules: readonly ComplianceRule[], facts: SessionFacts, passThreshold: number | null): ComplianceVerdict {
  const violations = rules.map((rule) => checkRule(rule, facts)).filter((v): v is Violation => v !== null);
  const rulesEvaluated = rules.length;
  const rulesPassed = rulesEvaluated - violations.length;
  const score = rulesEvaluated === 0 ? 1 : rulesPassed / rulesEvaluated;
  const passed = passThreshold === null ? violations.length === 0 : score >= passThreshold;
  const summary =
    violations.length === 0
      ? `All ${plural(rulesEvaluated, 'rule')} passed.`
      : `${rulesPassed} of ${plural(rulesEvaluated, 'rule')} passed; violated: ${violations.map((v) => `${v.ruleId} (${v.ruleType}: ${v.detail})`).join('; ')}.`;
  const rule =
    passThreshold === null
      ? violations.length === 0
        ? 'No violation: passed.'
        : 'Any violation fails the evaluation: failed.'
      : `Score ${roundScore(score)} ${passed ? '>=' : '<'} passThreshold ${passThreshold}: ${passed ? 'passed' : 'failed'}.`;
  return { score, passed, reasoning: `${summary} ${rule}`, violations, rulesEvaluated };
}

const roundScore = (score: number): number => Math.round(score * 10_000) / 10_000;
