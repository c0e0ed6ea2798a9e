import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { grants, routeScopes, type Scope } from './scopes.ts';

/**
 * AgentGate's MCP server asks `POST /api/mcp/authorize` before every tool call and runs the tool
 * only on `decision: "allow"`. Each of its tools calls one gate route; the tool is allowed when
 * the calling key's scopes grant the scope that route declares (so the answer can never
 * disagree with what the call itself would meet). A tool not listed here is refused.
 */
export const MCP_TOOL_ROUTES: Readonly<Record<string, string>> = {
  agentgate_request: 'POST /api/requests',
  agentgate_get: 'GET /api/requests/:id',
  agentgate_list: 'GET /api/requests',
  agentgate_decide: 'POST /api/requests/:id/decide',
  agentgate_list_policies: 'GET /api/policies',
  agentgate_create_policy: 'POST /api/policies',
  agentgate_update_policy: 'PUT /api/policies/:id',
  agentgate_delete_policy: 'DELETE /api/policies/:id',
  agentgate_list_audit_logs: 'GET /api/audit',
  agentgate_get_audit_actors: 'GET /api/audit/actors',
};

export interface ToolVerdict {
  decision: 'allow' | 'deny';
  /** AgentGate's field: present on a refusal. */
  status?: 'denied';
  toolName: string;
  /** The scope the tool's route needs; null for an unknown tool. */
  requiredScope: Scope | 'public' | 'any' | null;
  reason: string | null;
}

/** Pure: the verdict for one tool and the scopes of the key asking, given the scope each route needs (routeScopes). */
export function authorizeTool(toolName: string, scopes: readonly string[], scopeOfRoute: Readonly<Record<string, Scope | 'public' | 'any'>>): ToolVerdict {
  const route = Object.hasOwn(MCP_TOOL_ROUTES, toolName) ? MCP_TOOL_ROUTES[toolName]! : undefined;
  const required = route === undefined ? undefined : scopeOfRoute[route];
  if (required === undefined) {
    return {
      decision: 'deny',
      status: 'denied',
      toolName,
      requiredScope: null,
      reason: `Unknown tool "${toolName}": this gate authorizes ${Object.keys(MCP_TOOL_ROUTES).join(', ')}`,
    };
  }
  if (required === 'public' || grants(scopes, required)) return { decision: 'allow', toolName, requiredScope: required, reason: null };
  return {
    decision: 'deny',
    status: 'denied',
    toolName,
    requiredScope: required,
    reason: `${toolName} calls ${route}, which needs the ${required} scope; this key has ${scopes.join(', ') || 'no scope'}`,
  };
}

const verdictSchema = z
  .object({
    decision: z.enum(['allow', 'deny']),
    status: z.literal('denied').optional(),
    toolName: z.string(),
    requiredScope: z.string().nullable(),
    reason: z.string().nullable(),
  })
  .meta({ id: 'McpToolVerdict' });

export function registerMcpAuthorizeRoute(app: ZodApp): void {
  // Read from the route table on the first call, when every route is registered.
  let scopeOfRoute: Record<string, Scope | 'public' | 'any'> | undefined;
  app.post(
    '/api/mcp/authorize',
    // Any key: the answer depends on its scopes.
    routeOptions('any', {
      operationId: 'authorizeMcpTool',
      summary: 'May the calling key run this MCP tool? Answers allow or deny (with the reason) from the key’s scopes',
      description:
        'Called by AgentGate’s MCP server before each tool. `params` and `context` (the tool’s arguments) are accepted ' +
        'and not used: the verdict depends on the tool and the scopes of the key (or of the session’s key) only. ' +
        'An unknown tool is a deny, not an error.',
      tags: ['mcp'],
      body: z.strictObject({
        toolName: z.string({ error: 'toolName is required' }).trim().min(1, 'toolName is required').max(200),
        params: z.record(z.string(), z.unknown()).optional(),
        context: z.record(z.string(), z.unknown()).optional(),
      }),
      response: { 200: verdictSchema },
    }),
    async (request) => authorizeTool(request.body.toolName, JSON.parse(request.gateKey!.scopes) as string[], (scopeOfRoute ??= routeScopes(app.routeTable))),
  );
}
