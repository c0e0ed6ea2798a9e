import { isLoopbackHost, pingDatabase, routeOptions, toIsoOrNull, VIGIL_VERSION, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { hasActiveKey } from '../auth/index.ts';
import { storedCounts } from './store.ts';

/**
 * The open first-key bootstrap (POST /api/keys without a key while none exists): `closed` once a
 * key exists; `loopback` while open to this machine only; `exposed` while open beyond it, which the
 * start and the dashboard warn about until a key exists.
 */
const firstKeyBootstrap = z.enum(['closed', 'loopback', 'exposed']);

const statsSchema = z.object({
  totalEvents: z.number().int(),
  totalSessions: z.number().int(),
  totalAgents: z.number().int(),
  oldestEvent: z.string().nullable(),
  newestEvent: z.string().nullable(),
  storageSizeBytes: z.number().int(),
  judgeSpendUsd: z.number(),
});

export function registerSystemRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/health',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'checkHealth',
        summary: 'Liveness, with a database round trip (no authentication)',
        description:
          'Answers the shape DECISIONS.md gives plus `firstKeyBootstrap`: `closed` once an API key exists, `loopback` while the open first-key bootstrap is reachable from this machine only, `exposed` while it is reachable beyond it (the start and the dashboard warn then). It is here rather than on a route of its own because health is the one route the spec leaves without authentication, and the dashboard must read it before anyone has a key. 503 `{status: "degraded", version, db: {ok: false, latencyMs: null}}` when the database does not answer.',
        tags: ['system'],
        security: [],
        response: {
          200: z.object({ status: z.literal('ok'), version: z.string(), db: z.object({ ok: z.boolean(), latencyMs: z.number() }), firstKeyBootstrap }),
          503: z.object({ status: z.literal('degraded'), version: z.string(), db: z.object({ ok: z.boolean(), latencyMs: z.number().nullable() }) }),
        },
      },
    },
    async (_request, reply) => {
      try {
        const latencyMs = Math.round((await pingDatabase(ctx.database)) * 100) / 100;
        const bootstrap: z.output<typeof firstKeyBootstrap> = (await hasActiveKey(ctx.database))
          ? 'closed'
          : isLoopbackHost(ctx.config.host)
            ? 'loopback'
            : 'exposed';
        return { status: 'ok' as const, version: VIGIL_VERSION, db: { ok: true, latencyMs }, firstKeyBootstrap: bootstrap };
      } catch {
        return reply.status(503).send({ status: 'degraded' as const, version: VIGIL_VERSION, db: { ok: false, latencyMs: null } });
      }
    },
  );

  app.get(
    '/api/stats',
    routeOptions('read', {
      operationId: 'getStats',
      summary: 'Storage statistics',
      description: "`judgeSpendUsd` is the judge's cost (eval_result events), never part of the agents' spend.",
      tags: ['system'],
      response: { 200: statsSchema },
    }),
    async () => {
      const [counts, storageSizeBytes] = await Promise.all([storedCounts(ctx.database), ctx.database.sizeBytes()]);
      return {
        totalEvents: counts.events,
        totalSessions: counts.sessions,
        totalAgents: counts.agents,
        oldestEvent: toIsoOrNull(counts.oldestTs),
        newestEvent: toIsoOrNull(counts.newestTs),
        storageSizeBytes: Math.round(storageSizeBytes),
        // USD spent on LLM-judge calls (evals/), never part of any session's spend.
        judgeSpendUsd: counts.judgeSpendUsd,
      };
    },
  );
}
