import { z } from 'zod';
import { isoTimestampMs } from '@vigil/platform';
import { SYSTEM_AGENT_ID } from './system-agent.ts';
import { boundedCount, boundedNumber, MAX_COST_USD, MAX_COUNT, MAX_DURATION_MS, MAX_FIGURE, MAX_OFFSET, MAX_TOKENS } from '../bounds.ts';

/** A JSON value that must be present (null allowed, undefined not). */
const present = z.unknown().refine((v) => v !== undefined, { message: 'is required' });
const text = z.string().min(1).max(10_000);
// Every quantity has a bound (bounds.ts): no sum of accepted values overflows either database.
const costUsd = boundedNumber(0, MAX_COST_USD);
const durationMs = boundedNumber(0, MAX_DURATION_MS);
const tokens = boundedCount(MAX_TOKENS);
/** Input plus output. */
const totalTokens = boundedCount(2 * MAX_TOKENS);
const count = boundedCount(MAX_COUNT);
const figure = boundedNumber(-MAX_FIGURE, MAX_FIGURE);
const jsonObject = z.record(z.string(), z.unknown());

export const SEVERITIES = ['debug', 'info', 'warn', 'error', 'critical'] as const;
export const URGENCIES = ['low', 'normal', 'high', 'critical'] as const;

// Payloads keep fields they do not name (looseObject): the chain hashes what the agent sent.
const approvalOutcome = z.looseObject({ requestId: text, action: text, decidedBy: text, reason: z.string().optional() });

export const payloadSchemas = {
  session_started: z.looseObject({
    agentName: z.string().max(500).optional(),
    agentVersion: z.string().max(200).optional(),
    mcpClientInfo: jsonObject.optional(),
    tags: z.array(z.string().min(1).max(200)).max(100).optional(),
  }),
  session_ended: z.looseObject({
    reason: z.enum(['completed', 'error', 'timeout', 'manual']),
    summary: z.string().optional(),
    totalToolCalls: count.optional(),
    totalDurationMs: durationMs.optional(),
  }),
  tool_call: z.looseObject({ toolName: text, callId: text, arguments: present, serverName: z.string().optional() }),
  tool_response: z.looseObject({ callId: text, toolName: text, result: present, durationMs }),
  tool_error: z.looseObject({
    callId: text,
    toolName: text,
    error: present,
    // A code, never a quantity: any finite number (nothing sums or compares it).
    errorCode: z.union([z.string(), z.number()]).optional(),
    durationMs,
  }),
  approval_requested: z.looseObject({ requestId: text, action: text, params: present, urgency: z.enum(URGENCIES) }),
  approval_granted: approvalOutcome,
  approval_denied: approvalOutcome,
  approval_expired: approvalOutcome,
  form_submitted: z.looseObject({ submissionId: text, formId: text, formName: z.string().optional(), fieldCount: count }),
  form_completed: z.looseObject({ submissionId: text, formId: text, completedBy: text, durationMs }),
  form_expired: z.looseObject({ submissionId: text, formId: text, expiredAfterMs: durationMs }),
  llm_call: z.looseObject({
    callId: text,
    provider: text,
    model: text,
    messages: z.array(z.unknown()),
    systemPrompt: z.string().optional(),
    parameters: jsonObject.optional(),
    tools: z.array(z.unknown()).optional(),
    redacted: z.boolean().optional(),
  }),
  llm_response: z.looseObject({
    callId: text,
    provider: text,
    model: text,
    completion: present,
    toolCalls: z.array(z.unknown()).optional(),
    finishReason: text,
    usage: z.looseObject({ inputTokens: tokens, outputTokens: tokens, totalTokens: totalTokens.optional() }),
    costUsd,
    latencyMs: durationMs,
    redacted: z.boolean().optional(),
  }),
  cost_tracked: z.looseObject({
    provider: text,
    model: text,
    inputTokens: tokens,
    outputTokens: tokens,
    totalTokens,
    costUsd,
    trigger: z.string().optional(),
  }),
  alert_triggered: z.looseObject({
    alertRuleId: text,
    alertName: text,
    condition: text,
    currentValue: figure,
    threshold: figure,
    message: z.string(),
  }),
  alert_resolved: z.looseObject({ alertRuleId: text, alertName: text, resolvedBy: z.string().optional() }),
  custom: z.looseObject({ type: text, data: present }),
} as const;

export type IngestEventType = keyof typeof payloadSchemas;
export const INGEST_EVENT_TYPES = Object.keys(payloadSchemas) as IngestEventType[];
/** Produced only by the service itself (evaluations); never accepted from clients. */
export const SERVER_EVENT_TYPES = ['eval_result'] as const;
export type EventType = IngestEventType | (typeof SERVER_EVENT_TYPES)[number];

const identifier = z.string().min(1).max(256);

/** The agentId a client may write under: the system agent's events are the service's own bookkeeping. */
const clientAgentId = identifier.refine((id) => id !== SYSTEM_AGENT_ID, {
  message: `agentId "${SYSTEM_AGENT_ID}" is reserved for Vigil's own bookkeeping (alert events)`,
});

const envelope = {
  sessionId: identifier,
  agentId: clientAgentId,
  severity: z.enum(SEVERITIES).optional(),
  metadata: jsonObject.optional(),
  timestamp: isoTimestampMs.optional(),
};

export const incomingEventSchema = z.discriminatedUnion(
  'eventType',
  INGEST_EVENT_TYPES.map((type) => z.object({ ...envelope, eventType: z.literal(type), payload: payloadSchemas[type] })) as unknown as [
    z.ZodObject,
    ...z.ZodObject[],
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? `eventType must be one of: ${INGEST_EVENT_TYPES.join(', ')}` : undefined) },
) as unknown as z.ZodType<IncomingEvent>;

export interface IncomingEvent {
  sessionId: string;
  agentId: string;
  eventType: EventType;
  severity?: (typeof SEVERITIES)[number];
  metadata?: Record<string, unknown>;
  timestamp?: number;
  payload: Record<string, unknown>;
}

export const ingestBodySchema = z.object({
  events: z.array(incomingEventSchema).min(1, 'events must hold 1 to 1000 events').max(1000, 'events must hold 1 to 1000 events'),
});

export const eventSchema = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    timestamp: z.string(),
    sessionId: z.string(),
    agentId: z.string(),
    eventType: z.string(),
    severity: z.enum(SEVERITIES),
    payload: jsonObject,
    metadata: jsonObject,
    prevHash: z.string().nullable(),
    hash: z.string(),
    writtenBy: z
      .string()
      .nullable()
      .describe(
        'The credential that wrote the event: `key:<API key id>`, `webhook:<source>` (a signed webhook), `service_token`, `server` or `none` (authentication disabled); null for events stored before it was recorded. Outside the chain hash, under the audit log (docs/audit.md#who-wrote-an-event).',
      ),
  })
  .meta({ id: 'Event' });

export type Event = z.infer<typeof eventSchema>;

export const ingestResponseSchema = z.object({
  ingested: z.number().int(),
  events: z.array(z.object({ id: z.string(), hash: z.string() })),
});

const commaList = <T extends string>(values: readonly [T, ...T[]], name: string) =>
  z.string().transform((raw, ctx) => {
    const items = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = items.filter((item) => !(values as readonly string[]).includes(item));
    if (unknown.length > 0 || items.length === 0) {
      ctx.addIssue({ code: 'custom', message: `${name} must be a comma-separated list of: ${values.join(', ')}` });
      return z.NEVER;
    }
    return [...new Set(items)] as T[];
  });

export const eventTypeList = commaList([...INGEST_EVENT_TYPES, ...SERVER_EVENT_TYPES] as unknown as [EventType, ...EventType[]], 'eventType');

export const listEventsQuerySchema = z.object({
  sessionId: identifier.optional(),
  agentId: identifier.optional(),
  eventType: eventTypeList.optional(),
  severity: commaList(SEVERITIES, 'severity').optional(),
  from: isoTimestampMs.optional(),
  to: isoTimestampMs.optional(),
  search: z.string().min(1).max(500).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
});

export type ListEventsQuery = z.infer<typeof listEventsQuerySchema>;

export { clientAgentId, commaList, identifier };
