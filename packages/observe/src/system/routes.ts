import { pingDatabase, toIso, VIGIL_VERSION, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { SYSTEM_AGENT_ID } from '../events/index.ts';
import type { ObserveContext } from '../context.ts';
import { judgeSpendUsd } from '../evals/index.ts';

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
        summary: 'Liveness, with a database round trip (no authentication)',
        tags: ['system'],
        security: [],
        response: {
          200: z.object({ status: z.literal('ok'), version: z.string(), db: z.object({ ok: z.boolean(), latencyMs: z.number() }) }),
          503: z.object({ status: z.literal('degraded'), version: z.string(), db: z.object({ ok: z.boolean(), latencyMs: z.number().nullable() }) }),
        },
      },
    },
    async (_request, reply) => {
      try {
        const latencyMs = Math.round((await pingDatabase(ctx.database)) * 100) / 100;
        return { status: 'ok' as const, version: VIGIL_VERSION, db: { ok: true, latencyMs } };
      } catch {
        return reply.status(503).send({ status: 'degraded' as const, version: VIGIL_VERSION, db: { ok: false, latencyMs: null } });
      }
    },
  );

  app.get(
    '/api/stats',
    { schema: { summary: 'Storage statistics', tags: ['system'], response: { 200: statsSchema } } },
    async () => {
      const { db } = ctx.database;
      const [sessions, agents, oldest, newest, storageSizeBytes, judgeSpend] = await Promise.all([
        db
          .selectFrom('sessions')
          .select((eb) => [eb.fn.countAll<number>().as('sessions'), eb.fn.coalesce(eb.fn.sum<number>('event_count'), eb.lit(0)).as('events')])
          .executeTakeFirstOrThrow(),
        // Events and sessions are what is stored; agents are the user's (not the system agent of alert bookkeeping).
        db.selectFrom('agents').select((eb) => eb.fn.countAll<number>().as('n')).where('id', '<>', SYSTEM_AGENT_ID).executeTakeFirstOrThrow(),
        db.selectFrom('events').select('ts').orderBy('ts', 'asc').limit(1).executeTakeFirst(),
        db.selectFrom('events').select('ts').orderBy('ts', 'desc').limit(1).executeTakeFirst(),
        ctx.database.sizeBytes(),
        judgeSpendUsd(ctx),
      ]);
      return {
        totalEvents: Number(sessions.events),
        totalSessions: Number(sessions.sessions),
        totalAgents: Number(agents.n),
        oldestEvent: oldest ? toIso(oldest.ts) : null,
        newestEvent: newest ? toIso(newest.ts) : null,
        storageSizeBytes: Math.round(storageSizeBytes),
        // USD spent on LLM-judge calls (evals/), never part of any session's spend.
        judgeSpendUsd: judgeSpend,
      };
    },
  );
}
