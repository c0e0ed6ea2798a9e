/**
 * The agent of the service's own bookkeeping: the `alert:<ruleId>` sessions that hold the
 * alert_triggered / alert_resolved events. It is no agent of the user's: it counts toward no
 * agent's sessions, health or completion, is left out of agent lists, analytics and guardrails
 * (README, *Figures*), and clients cannot ingest under its id (400). Its sessions and events stay
 * readable like any other.
 */
export const SYSTEM_AGENT_ID = 'system';
