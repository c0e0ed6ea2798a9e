/**
 * The observe ingest workload that bench/ingest-and-query.ts and bench/memory.ts send: batches of
 * tool calls and LLM calls (one in forty answers an error), posted by CLIENTS concurrent clients.
 */

export const CLIENTS = 8;
export const TIMESTAMP_TOKEN = '__BENCH_TS__';

export const agentOf = (sessionId: string): string => `agent-${sessionId.length % 7}`;

function event(sessionId: string, i: number): object {
  const agentId = agentOf(sessionId);
  switch (i % 4) {
    case 0:
      return {
        sessionId,
        agentId,
        eventType: 'tool_call',
        payload: { toolName: 'web_search', callId: `c${i}`, arguments: { query: `quarterly revenue report ${i}`, maxResults: 10 } },
      };
    case 1:
      return {
        sessionId,
        agentId,
        eventType: 'tool_response',
        payload: { toolName: 'web_search', callId: `c${i - 1}`, result: { hits: 10, top: 'https://example.com/report' }, durationMs: 120 + (i % 50) },
      };
    case 2:
      return {
        sessionId,
        agentId,
        eventType: 'llm_call',
        payload: {
          callId: `l${i}`,
          provider: 'openai',
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'Summarise the quarterly revenue report in three bullet points.' }],
        },
      };
    default:
      return {
        sessionId,
        agentId,
        eventType: 'llm_response',
        severity: i % 40 === 3 ? 'error' : 'info',
        payload: {
          callId: `l${i - 1}`,
          provider: 'openai',
          model: 'gpt-4o-mini',
          completion: 'Revenue grew 12% on cloud services.',
          finishReason: 'stop',
          usage: { inputTokens: 420, outputTokens: 96 },
          costUsd: 0.00012,
          latencyMs: 850,
        },
      };
  }
}

export function batchBody(sessionId: string, size: number, timestamp = TIMESTAMP_TOKEN): string {
  return JSON.stringify({ events: Array.from({ length: size }, (_, i) => ({ ...event(sessionId, i), timestamp })) });
}

export async function post(base: string, key: string, body: string): Promise<void> {
  const response = await fetch(`${base}/api/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  if (response.status !== 201) throw new Error(`ingest failed: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

/**
 * Sends `batches` bodies from CLIENTS concurrent clients, batch k stamped at the k-th step of
 * [start, start + span); returns events per second. `bodies`: pre-built ones, taken in turn, or
 * batch k's built when it is sent.
 */
export async function ingest(
  base: string,
  key: string,
  bodies: readonly string[] | ((k: number) => string),
  batchSize: number,
  batches: number,
  start: number,
  span: number,
): Promise<number> {
  const bodyOf = typeof bodies === 'function' ? bodies : (k: number) => bodies[k % bodies.length]!;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < batches) {
        const k = next++;
        const timestamp = new Date(start + Math.floor((k * span) / batches)).toISOString();
        await post(base, key, bodyOf(k).replaceAll(TIMESTAMP_TOKEN, timestamp));
      }
    }),
  );
  return (batches * batchSize) / ((performance.now() - started) / 1000);
}
