import { z } from 'zod';
import { isoTimestampMs } from '@vigil/platform';
import { MAX_OFFSET } from '../bounds.ts';
import { commaList, identifier } from '../events/index.ts';
import { SESSION_STATUSES } from '../events/index.ts';

export const sessionSchema = z
  .object({
    id: z.string(),
    agentId: z.string(),
    agentName: z.string(),
    status: z.enum(SESSION_STATUSES),
    startedAt: z.string(),
    endedAt: z.string().optional(),
    lastEventAt: z.string(),
    durationMs: z
      .number()
      .describe('endedAt, else the last event before its first silence longer than SESSION_IDLE_TIMEOUT_MS, else lastEventAt; minus startedAt'),
    eventCount: z.number().int(),
    toolCallCount: z.number().int(),
    errorCount: z.number().int(),
    totalCostUsd: z.number(),
    tags: z.array(z.string()),
  })
  .meta({ id: 'Session' });

export type Session = z.infer<typeof sessionSchema>;

export const listSessionsQuerySchema = z
  .object({
    agentId: identifier.optional(),
    status: commaList(SESSION_STATUSES, 'status').optional(),
    from: isoTimestampMs.optional(),
    to: isoTimestampMs.optional(),
    tags: z
      .string()
      .transform((raw) => [
        ...new Set(
          raw
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean),
        ),
      ])
      .pipe(z.array(z.string().max(200)).min(1, 'tags must name at least one tag').max(50)),
    limit: z.coerce.number().int().min(1).max(500).default(50),
    offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
  })
  .partial({ tags: true });

export type ListSessionsQuery = z.infer<typeof listSessionsQuerySchema>;

/** A page of a session's steps: the events after `after` (a `seq`), in `seq` order. */
export const sessionStepsQuerySchema = z.object({
  after: z.coerce.number().int().min(-1).default(-1),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
});

export const sessionStepSchema = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    timestamp: z.string(),
    eventType: z.string(),
    severity: z.string(),
    toolName: z.string().nullable(),
    model: z.string().nullable(),
    costUsd: z.number().nullable().describe('llm_response and cost_tracked: the spend recorded (the one definition of spend)'),
    latencyMs: z.number().nullable().describe("llm_response: its latencyMs; tool_response and tool_error: the tool's durationMs"),
    inputTokens: z.number().nullable(),
    outputTokens: z.number().nullable(),
    isError: z.boolean().describe('The one definition of an error event: severity error or critical, or a tool_error'),
  })
  .meta({ id: 'SessionStep' });

export type SessionStep = z.infer<typeof sessionStepSchema>;

export const chainBreakSchema = z.object({ seq: z.number().int(), eventId: z.string().nullable(), reason: z.string() });
