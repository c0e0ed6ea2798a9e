/**
 * The agent of the service's own bookkeeping: the `alert:<ruleId>` sessions that hold the
 * alert_triggered / alert_resolved events. It is no agent of the user's: it counts toward no
 * agent's sessions, health or completion, is left out of agent lists, analytics and guardrails
 * (docs/guide/behaviour.md, *Figures*), and clients cannot ingest under its id (400). Its sessions and events stay
 * readable like any other.
 */
export const SYSTEM_AGENT_ID = 'system';

/** The agents an answer about agents covers: the one asked for by name, else every agent but the system agent. */
export function agentScope(agentId: string | undefined): { agentId: string } | { excludeAgentId: string } {
  return agentId === undefined ? { excludeAgentId: SYSTEM_AGENT_ID } : { agentId };
}
