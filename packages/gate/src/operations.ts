import type { OperationTable } from '@vigil/platform';

/**
 * Every documented route's OpenAPI operation: its `operationId` (what typed clients call it;
 * renaming one breaks them) and, as `errors`, the statuses it answers beyond those the HTTP kit
 * lists for every route of its kind (400; 401 and 429 with a key, 403 with a scope; 404 and 414
 * with an id; 413 and 415 with a body; 500, 503). system/openapi.test.ts fails for a route missing here.
 */
export const GATE_OPERATIONS: OperationTable = {
  'GET /health': 'checkHealth',
  'POST /api/requests': 'createRequest',
  'GET /api/requests': 'listRequests',
  'GET /api/requests/:id': 'getRequest',
  'POST /api/requests/:id/decide': { id: 'decideRequest', errors: [409] },
  'POST /api/requests/:id/confirm': { id: 'confirmRequest', errors: [409] },
  'GET /api/requests/:id/audit': 'getRequestAudit',
  'GET /api/requests/:id/audit/verify': 'verifyRequestAudit',
  'GET /api/audit': 'listAuditEntries',
  'GET /api/audit/actors': 'listAuditActors',
  'GET /api/audit/changes': 'listAdminChanges',
  'GET /api/audit/public-key': 'getAuditPublicKey',
  'GET /api/audit/checkpoint': { id: 'getAuditCheckpoint', errors: [404] },
  'POST /api/audit/checkpoint': 'createAuditCheckpoint',
  'GET /api/audit/consistency': 'getAuditConsistencyProof',
  'GET /api/audit/inclusion': { id: 'getAuditInclusionProof', errors: [404] },
  'GET /api/audit/export': { id: 'exportAuditBundle', errors: [404] },
  'GET /api/audit/leaves': 'listAuditLeaves',
  'GET /api/audit/unlogged': 'listUnloggedAuditEntries',
  'GET /api/audit/heads': 'listRequestAuditHeads',
  'GET /api/policies': 'listPolicies',
  'POST /api/policies': 'createPolicy',
  'PUT /api/policies/:id': 'updatePolicy',
  'DELETE /api/policies/:id': 'deletePolicy',
  'POST /api/policies/simulate': 'simulatePolicies',
  'POST /api/api-keys': 'createApiKey',
  'GET /api/api-keys': 'listApiKeys',
  'PATCH /api/api-keys/:id': 'updateApiKey',
  'DELETE /api/api-keys/:id': 'revokeApiKey',
  // A session token cannot open another session: 403 although any key may.
  'POST /api/dashboard/sessions': { id: 'createDashboardSession', errors: [403] },
  'POST /api/mcp/sessions': { id: 'createMcpSession', errors: [403] },
  'POST /api/mcp/authorize': 'authorizeMcpTool',
  'GET /api/dashboard/sessions/current': 'getCurrentSession',
  'DELETE /api/dashboard/sessions/current': 'endCurrentSession',
  'GET /api/webhooks': 'listWebhooks',
  'POST /api/webhooks': 'createWebhook',
  'PATCH /api/webhooks/:id': 'updateWebhook',
  'DELETE /api/webhooks/:id': 'deleteWebhook',
  'GET /api/webhooks/:id/deliveries': 'listWebhookDeliveries',
  // Signed by the platform instead of a key: 401 for a bad signature.
  'POST /api/chat/slack/interactions': { id: 'slackInteraction', errors: [401, 415] },
  'POST /api/chat/discord/interactions': { id: 'discordInteraction', errors: [401, 415] },
};
