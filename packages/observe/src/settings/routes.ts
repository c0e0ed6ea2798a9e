import { acceptingReadBack, keyChangeActor, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { HEALTH_WEIGHTS } from '../health/index.ts';
import { readSettings, updateSettings, type Settings } from './service.ts';

const publicConfigSchema = z
  .object({
    retentionDays: z.number().int().describe('Sessions whose last event is older are deleted whole; 0 keeps everything'),
    approvalGateSecretSet: z.boolean(),
    formServiceSecretSet: z.boolean(),
    authDisabled: z.boolean(),
    memoryEnabled: z.boolean(),
  })
  .meta({ id: 'Config' });

const healthWeightsSchema = z.object({
  errorRate: z.number(),
  costEfficiency: z.number(),
  toolSuccess: z.number(),
  latency: z.number(),
  completionRate: z.number(),
});

export function registerSettingsRoutes(app: ZodApp, ctx: ObserveContext): void {
  const toPublic = (settings: Settings): z.infer<typeof publicConfigSchema> => ({
    retentionDays: settings.retentionDays,
    approvalGateSecretSet: settings.approvalGateWebhookSecret !== null,
    formServiceSecretSet: settings.formServiceWebhookSecret !== null,
    authDisabled: ctx.config.authDisabled,
    memoryEnabled: ctx.config.memory.enabled,
  });

  app.get(
    '/api/config',
    routeOptions('read', {
      operationId: 'getConfig',
      summary: 'Configuration (secrets are reported as set or not, never returned)',
      tags: ['config'],
      response: { 200: publicConfigSchema },
    }),
    async () => toPublic(await readSettings(ctx)),
  );

  app.put(
    '/api/config',
    routeOptions('admin', {
      operationId: 'updateConfig',
      summary:
        'Update retention and webhook secrets; a secret set to null falls back to the environment. The body GET returned is accepted: its read-only fields are ignored',
      description: '`retentionDays` 0 keeps everything. Secrets are answered as set or unset only.',
      tags: ['config'],
      errorStatuses: [422],
      body: acceptingReadBack(
        z.object({
          retentionDays: z.number().int().min(0).max(36_500).optional(),
          approvalGateWebhookSecret: z.string().min(16).max(512).nullable().optional(),
          formServiceWebhookSecret: z.string().min(16).max(512).nullable().optional(),
        }),
        publicConfigSchema,
      ),
      response: { 200: publicConfigSchema },
    }),
    async (request) => toPublic(await updateSettings(ctx, request.body, keyChangeActor(request.apiKey))),
  );

  app.get(
    '/api/config/features',
    routeOptions('read', {
      operationId: 'getFeatureFlags',
      summary: 'Feature flags',
      tags: ['config'],
      response: { 200: z.object({ memory: z.boolean(), memoryUrl: z.string() }) },
    }),
    async () => ({ memory: ctx.config.memory.enabled, memoryUrl: ctx.config.memory.enabled ? (ctx.config.memory.url ?? '') : '' }),
  );

  app.get(
    '/api/config/health-weights',
    routeOptions('read', {
      operationId: 'getHealthWeights',
      summary: 'Health score weights in use',
      description: 'The weights are fixed: `{errorRate: 0.3, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.15, completionRate: 0.15}`.',
      tags: ['config'],
      response: { 200: healthWeightsSchema },
    }),
    async () => ({ ...HEALTH_WEIGHTS }),
  );

  // Not in the OpenAPI document: an operation that cannot succeed has nothing to offer a client.
  app.put(
    '/api/config/health-weights',
    { config: { scope: 'admin' }, schema: { operationId: 'updateHealthWeights', errorStatuses: [501], hide: true } },
    async () => {
      throw observeError('healthWeightsFixed');
    },
  );
}
