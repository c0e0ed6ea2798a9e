import { routeOptions, isoTimestampMs, periodInOrder, type ZodApp } from '@vigil/platform';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { writeContainer } from './container.ts';
import { buildEvidence, EvidenceReadError, httpEvidenceService } from './pack.ts';
import type { EvidenceService } from './parts.ts';

/** The gate's credential for the pack's gate parts (the dashboard's gate session token), as an Authorization value. */
export const GATE_AUTHORIZATION_HEADER = 'x-vigil-gate-authorization';

const evidencePackBody = periodInOrder(
  z.strictObject({
    from: isoTimestampMs,
    to: isoTimestampMs,
    agents: z
      .array(z.string().min(1).max(200))
      .max(50)
      .default([])
      .describe('Only these agents’ oversight records, breaches and error sessions (empty: every agent)'),
    intervalMs: z.number().int().min(1).max(86_400_000).default(60_000).describe('The checkpoint interval the services run with: longer gaps are reported'),
  }),
);

/** This observe as the pack reads it: its own routes, in process, with the caller's credential (so its scopes apply). */
function observeInProcess(app: FastifyInstance, authorization: string | undefined): EvidenceService {
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await app.inject({
      method,
      url: path,
      headers: authorization === undefined ? {} : { authorization },
      ...(body !== undefined && { payload: body as object }),
    });
    if (response.statusCode >= 400)
      throw new EvidenceReadError('observe', response.statusCode, `observe: ${method} ${path} answered ${response.statusCode}: ${response.body.slice(0, 300)}`);
    return response.json() as unknown;
  };
  return { name: 'observe', url: 'this observe', get: (path) => call('GET', path), post: (path, body) => call('POST', path, body) };
}

export function registerEvidenceRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/audit/evidence-pack',
    routeOptions('admin', {
      operationId: 'buildEvidencePack',
      summary: 'Build the evidence pack of a period (what `vigil evidence` writes), for download',
      description:
        'The same assembly as `vigil evidence` (docs/audit.md, "Evidence packs"): observe\'s parts read with the caller\'s credential, and, when the ' +
        '`X-Vigil-Gate-Authorization` header carries a gate credential (the dashboard sends its gate session), the gate’s parts from GATE_URL with it. ' +
        '`content` is the pack (JSON lines), verifiable offline with `vigil verify evidence`; a read either service refuses is a 502 naming it.',
      tags: ['audit'],
      body: evidencePackBody,
      errorStatuses: [502],
      response: {
        200: z.object({
          fileName: z.string().describe('A file name for the download: vigil-evidence-<from>-<to>.jsonl'),
          files: z.number().int().describe('Files in the pack: the manifest, the parts, the report and the signatures'),
          content: z.string().describe('The pack: one `{"path", "content"}` JSON line per file'),
        }),
      },
    }),
    async (request) => {
      const { from, to, agents, intervalMs } = request.body;
      const gateAuthorization = request.headers[GATE_AUTHORIZATION_HEADER];
      const [fromIso, toIso] = [new Date(from).toISOString(), new Date(to).toISOString()];
      try {
        const files = await buildEvidence(
          {
            from: fromIso,
            to: toIso,
            agents,
            intervalMs,
            observe: observeInProcess(app, request.headers.authorization),
            gate:
              typeof gateAuthorization === 'string' && gateAuthorization !== ''
                ? httpEvidenceService('gate', ctx.config.gateUrl, gateAuthorization)
                : undefined,
          },
          undefined,
          () => new Date(ctx.clock.now()),
        );
        const stamp = (iso: string) => iso.replace(/[:.]/g, '-');
        return { fileName: `vigil-evidence-${stamp(fromIso)}-${stamp(toIso)}.jsonl`, files: files.length, content: writeContainer(files) };
      } catch (error) {
        if (error instanceof EvidenceReadError || (error as Error).name === 'TimeoutError' || error instanceof TypeError)
          throw observeError('evidenceReadFailed', `A read the evidence pack needs failed: ${(error as Error).message}`);
        throw error;
      }
    },
  );
}
