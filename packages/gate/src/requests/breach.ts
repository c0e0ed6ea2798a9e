import { fetchWithTimeout, joinUrl } from '@vigil/platform';
import type { GateConfig } from '../config.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { RequestRow } from './tables.ts';
import type { PolicyDecision } from '../policies/index.ts';

const BREACH_TIMEOUT_MS = 3000;

/**
 * Tells observe of a hard deny (a policy auto_deny) so it lands as a failed evaluation in the
 * agent's session chain. Fire-and-forget: never awaited by the decision, failures only logged.
 */
export function reportPolicyDeny(config: GateConfig, log: FastifyBaseLogger, request: RequestRow, decision: PolicyDecision): void {
  const observe = config.observe;
  const context = JSON.parse(request.context) as Record<string, unknown>;
  if (!observe?.serviceToken || typeof context.sessionId !== 'string') return;
  const body = {
    sessionId: context.sessionId,
    agentId: typeof context.agentId === 'string' ? context.agentId : 'external',
    breach: {
      ruleId: `${decision.policyId}#${decision.ruleIndex}`,
      ruleType: 'approval_policy',
      tool: request.action,
      reason: request.decision_reason ?? undefined,
      source: 'approval_gate',
    },
  };
  setImmediate(() => {
    fetchWithTimeout(joinUrl(observe.url, '/api/internal/eval/guardrail-breach'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${observe.serviceToken}` },
      body: JSON.stringify(body),
      timeoutMs: BREACH_TIMEOUT_MS,
    })
      .then(async (response) => {
        await response.arrayBuffer();
        if (!response.ok) log.warn({ status: response.status, request: request.id }, 'observe refused the breach report');
      })
      .catch((error: unknown) => log.warn({ err: error, request: request.id }, 'could not report the deny to observe'));
  });
}
