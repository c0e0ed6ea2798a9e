import assert from 'node:assert/strict';
import type { TestObserve } from '../testing.ts';

/** Helpers shared by the recall and context tests. */

export const NOW = Date.parse('2026-11-22T10:00:00.000Z');
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const ago = (ms: number): string => new Date(NOW - ms).toISOString();

export type EventInput = Record<string, unknown>;

export const toolCall = (sessionId: string, agentId: string, toolName: string, args: unknown, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'tool_call',
  timestamp,
  payload: { toolName, callId: `c-${toolName}`, arguments: args },
});

export const toolError = (sessionId: string, agentId: string, toolName: string, error: string, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'tool_error',
  timestamp,
  payload: { toolName, callId: `c-${toolName}`, error, durationMs: 12 },
});

export const llmCall = (sessionId: string, agentId: string, content: string, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'llm_call',
  timestamp,
  payload: {
    callId: 'l1',
    provider: 'openai',
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content },
    ],
  },
});

export const llmResponse = (sessionId: string, agentId: string, completion: string, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'llm_response',
  timestamp,
  payload: {
    callId: 'l1',
    provider: 'openai',
    model: 'gpt-4o-mini',
    completion,
    finishReason: 'stop',
    usage: { inputTokens: 100, outputTokens: 20 },
    costUsd: 0.0001,
    latencyMs: 300,
  },
});

export const customEvent = (sessionId: string, agentId: string, type: string, data: unknown, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'custom',
  timestamp,
  payload: { type, data },
});

export const toolResponse = (sessionId: string, agentId: string, toolName: string, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'tool_response',
  timestamp,
  payload: { toolName, callId: `c-${toolName}`, result: { ok: true }, durationMs: 20 },
});

export const sessionStarted = (
  sessionId: string,
  agentId: string,
  payload: Record<string, unknown> = {},
  timestamp?: string,
  metadata?: Record<string, unknown>,
): EventInput => ({
  sessionId,
  agentId,
  eventType: 'session_started',
  timestamp,
  metadata,
  payload,
});

export const sessionEnded = (sessionId: string, agentId: string, reason: string, summary?: string, timestamp?: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'session_ended',
  timestamp,
  payload: summary === undefined ? { reason } : { reason, summary },
});

/** Runs the embeddings job once (asserting it took the lease). */
export async function drain(observe: TestObserve): Promise<void> {
  assert.equal(await observe.service.jobs.embeddings.tick(), true, 'the embeddings job ran');
}

export async function queueRows(
  observe: TestObserve,
): Promise<{ source_type: string; source_id: string; attempts: number; generation: number; last_error: string | null }[]> {
  return observe.service.context.database.db
    .selectFrom('embedding_queue')
    .select(['source_type', 'source_id', 'attempts', 'generation', 'last_error'])
    .orderBy('source_type')
    .orderBy('source_id')
    .execute();
}

export async function storedEmbeddings(
  observe: TestObserve,
): Promise<{ source_type: string; source_id: string; model: string; dims: number; text: string; deleted: number }[]> {
  return observe.service.context.database.db
    .selectFrom('embeddings')
    .select(['source_type', 'source_id', 'model', 'dims', 'text', 'deleted'])
    .orderBy('source_type')
    .orderBy('source_id')
    .execute();
}

/**
 * Texts on distinct topics (billing, deployment, database migration, email, …): the corpus of the
 * quality tests.
 */
export const TOPICS = [
  'Generate the monthly billing statement for account 4471 and apply the loyalty discount',
  'Roll out version 2.3 of the checkout service to the production cluster using a blue green deployment',
  'Run database migration 0042 which adds the customer_email column to the orders table',
  'Send the welcome email with the onboarding guide to new subscribers',
  'Reset the password for the locked user account after three failed login attempts',
  'Search the knowledge base for articles about configuring single sign-on',
  'Schedule a recurring meeting with the design team every Tuesday afternoon',
  'Upload the quarterly financial report PDF to the shared drive folder',
  'Refund the duplicate charge on order 99812 back to the original credit card',
  'Check warehouse inventory levels for the red running shoes in size 42',
  'Fetch the weather forecast for Berlin for the next five days',
  'Translate the product description from English into Japanese',
  'Invalidate the CDN cache for the marketing landing page images',
  'Rotate the expiring TLS certificate on the api gateway load balancer',
  'Restart the crashing kubernetes pod in the payments namespace',
  'Export the list of active customers to a CSV spreadsheet',
  'Post a notification to the incidents Slack channel about elevated latency',
  'Verify the phone number with a six digit SMS code',
  'Geocode the delivery address into latitude and longitude coordinates',
  'Recommend similar books based on the reader purchase history',
  'Flag the suspicious transaction from a new device as potential fraud',
  'Predict which subscribers are likely to churn next quarter',
  'Upgrade the customer subscription from the basic plan to the premium tier',
  'Apply the SPRING25 coupon code to the shopping cart total',
  'Moderate the product review containing offensive language',
  'Summarise the notes from yesterday architecture review meeting',
  'Review the pull request that refactors the authentication middleware',
  'Investigate the flaky unit test in the date parsing module',
  'Diagnose the memory leak in the image thumbnail worker',
  'Clean up the disk volume that is ninety five percent full on the logging server',
  'Drain the backlog of messages stuck in the order processing queue',
  'Retry the failed webhook delivery to the partner endpoint',
  'Refresh the expired OAuth access token for the Google Drive integration',
  'Calculate sales tax for an order shipped to Ontario Canada',
  'Convert the invoice amount from euros to US dollars at today exchange rate',
  'Delete all personal data for the user under the GDPR erasure request',
  'Restore the staging database from last night backup snapshot',
  'Enable the new dark mode feature flag for ten percent of users',
  'Analyse the results of the pricing page A/B experiment',
  'Print a shipping label for the parcel going to Lisbon via express courier',
  'Transcode the uploaded lecture video into 720p streaming format',
  'Classify the sentiment of the latest customer support tickets',
  'Open a support ticket for the customer whose package arrived damaged',
  'Resize the profile pictures to square thumbnails',
  'Rebuild the search index after the product catalogue import',
  'Investigate the CPU spike on the recommendation engine hosts',
  'Renew the company domain name registration before it lapses',
  'Configure DNS records so the blog subdomain points to the new host',
  'Book a flight from Madrid to Oslo for the sales conference',
  'Reserve a table for six people at an Italian restaurant downtown',
  'Draft a polite reply declining the vendor partnership proposal',
  'Compile the release notes for the mobile app version 5.1',
  'Audit the IAM permissions granted to the contractor role',
  'Estimate the cloud hosting cost for the analytics cluster next month',
  'Archive chat transcripts older than two years to cold storage',
];

/** The corpus as events of varied types (tool calls, LLM calls and answers, tool errors, custom), five per session. */
export function topicEvents(agentId = 'agent-q'): EventInput[] {
  return TOPICS.map((text, i) => {
    const sessionId = `topic-${Math.floor(i / 5)}`;
    switch (i % 5) {
      case 0:
        return toolCall(sessionId, agentId, 'task_runner', { instruction: text });
      case 1:
        return llmCall(sessionId, agentId, text);
      case 2:
        return llmResponse(sessionId, agentId, text);
      case 3:
        return toolError(sessionId, agentId, 'task_runner', text);
      default:
        return customEvent(sessionId, agentId, 'note', { text });
    }
  });
}
