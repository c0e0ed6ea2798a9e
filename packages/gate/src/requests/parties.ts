/** The agent and session a request names in its context (`context.agentId`, `context.sessionId`), each when it is a string. */
export function requestParties(context: Record<string, unknown>): { agentId: string | undefined; sessionId: string | undefined } {
  return {
    agentId: typeof context.agentId === 'string' ? context.agentId : undefined,
    sessionId: typeof context.sessionId === 'string' ? context.sessionId : undefined,
  };
}
