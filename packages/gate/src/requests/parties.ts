/** The agent and session a request names in its context (`context.agentId`, `context.sessionId`), each when it is a string. */
export function requestParties(context: Record<string, unknown>): { agentId: string | undefined; sessionId: string | undefined } {
  return {
    agentId: typeof context.agentId === 'string' ? context.agentId : undefined,
    sessionId: typeof context.sessionId === 'string' ? context.sessionId : undefined,
  };
}

/** The session tags a request's context carries (`context.tags`, the strings of it; the SDK sends its session's tags). */
export function requestTags(context: Record<string, unknown>): string[] {
  return Array.isArray(context.tags) ? context.tags.filter((tag): tag is string => typeof tag === 'string') : [];
}
