import { routeOptions, toIso, toIsoOrNull, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier } from '../events/index.ts';
import type { AgentRow } from '../events/index.ts';
import { clearPause, findAgent, listAgents, setPause } from './store.ts';

const agentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    firstSeenAt: z.string(),
    lastSeenAt: z.string(),
    sessionCount: z.number().int(),
    pausedAt: z.string().nullable(),
    pauseReason: z.string().nullable(),
    modelOverride: z.string().nullable(),
    approvalPolicyId: z.string().nullable(),
  })
  .meta({ id: 'Agent' });

function toAgent(row: AgentRow): z.infer<typeof agentSchema> {
  return {
    id: row.id,
    name: row.name,
    firstSeenAt: toIso(row.first_seen_at),
    lastSeenAt: toIso(row.last_seen_at),
    sessionCount: row.session_count,
    pausedAt: toIsoOrNull(row.paused_at),
    pauseReason: row.pause_reason,
    modelOverride: row.model_override,
    approvalPolicyId: row.approval_policy_id,
  };
}

const agentParams = z.object({ id: identifier });

export function registerAgentRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/agents',
    routeOptions('read', {
      operationId: 'listAgents',
      summary: 'List agents, most recently seen first',
      tags: ['agents'],
      response: { 200: z.object({ agents: z.array(agentSchema) }) },
    }),
    async () => ({ agents: (await listAgents(ctx.database)).map(toAgent) }),
  );

  app.get(
    '/api/agents/:id',
    // An agent reads its state (pause, model override, approval policy) here while it runs; a reader sees it too.
    routeOptions(['ingest', 'read'], {
      operationId: 'getAgent',
      summary: 'Agent detail, including pause state and model override',
      description:
        'An agent reads its state (pause, model override, approval policy) here while it runs; `pausedAt`, `pauseReason`, `modelOverride` and `approvalPolicyId` are null when unset.',
      tags: ['agents'],
      params: agentParams,
      response: { 200: agentSchema },
    }),
    async (request) => {
      const row = await findAgent(ctx.database, request.params.id);
      if (!row) throw observeError('agentNotFound');
      return toAgent(row);
    },
  );

  app.post(
    '/api/agents/:id/pause',
    routeOptions('admin', {
      operationId: 'pauseAgent',
      summary: 'Pause an agent by hand (it reads pausedAt from GET /api/agents/:id); an agent already paused keeps its first pause',
      description: 'No body pauses with a default reason.',
      tags: ['agents'],
      params: agentParams,
      // No body at all pauses with a default reason.
      body: z.strictObject({ reason: z.string().trim().min(1).max(1000).optional() }).nullish(),
      response: { 200: agentSchema },
    }),
    async (request) => {
      const existing = await findAgent(ctx.database, request.params.id);
      if (!existing) throw observeError('agentNotFound');
      await setPause(ctx.database, existing.id, ctx.clock.now(), request.body?.reason ?? 'Paused by hand');
      return toAgent((await findAgent(ctx.database, existing.id))!);
    },
  );

  app.post(
    '/api/agents/:id/resume',
    routeOptions('admin', {
      operationId: 'resumeAgent',
      summary: 'Clear a pause (and optionally the model override and the approval policy a guardrail set)',
      description: 'No body is a plain resume.',
      tags: ['agents'],
      params: agentParams,
      // No body at all is a plain resume.
      body: z.strictObject({ clearModelOverride: z.boolean().optional(), clearApprovalPolicy: z.boolean().optional() }).nullish(),
      response: { 200: agentSchema },
    }),
    async (request) => {
      const existing = await findAgent(ctx.database, request.params.id);
      if (!existing) throw observeError('agentNotFound');
      await clearPause(ctx.database, existing.id, {
        modelOverride: request.body?.clearModelOverride === true,
        approvalPolicy: request.body?.clearApprovalPolicy === true,
      });
      return toAgent((await findAgent(ctx.database, existing.id))!);
    },
  );

  app.post(
    '/api/internal/agents/:id/pause',
    {
      config: { auth: 'service' },
      schema: {
        operationId: 'pauseAgentForBudget',
        summary: "Pause an agent for the gate (a budget's hard threshold; service token only); an agent already paused keeps its first pause",
        description: 'An agent not seen yet is a 404. 503 when `INTERNAL_SERVICE_TOKEN` is unset.',
        tags: ['agents'],
        params: agentParams,
        body: z.strictObject({ reason: z.string().trim().min(1).max(1000) }),
        response: { 200: agentSchema },
      },
    },
    async (request) => {
      const existing = await findAgent(ctx.database, request.params.id);
      if (!existing) throw observeError('agentNotFound');
      await setPause(ctx.database, existing.id, ctx.clock.now(), request.body.reason);
      return toAgent((await findAgent(ctx.database, existing.id))!);
    },
  );
}
