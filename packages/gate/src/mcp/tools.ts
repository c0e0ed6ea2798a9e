// The gate's MCP tools (docs/guide/mcp.md): each one calls one gate route. Served at /mcp, and the
// base of the same tools of `vigil mcp` (stdio), which is why this file needs zod only.
import { mcpRouteTool, queryString } from '@vigil/platform/mcp-tool';
import { z } from 'zod';

const URGENCIES = ['low', 'normal', 'high', 'critical'] as const;
const jsonObject = z.record(z.string(), z.unknown());
const requestId = z.string().min(1).max(100);

/** The gate's MCP tools by name: /mcp serves them all; `vigil mcp` (stdio) builds on them. */
export const GATE_MCP_TOOLS = {
  create_approval_request: mcpRouteTool({
    name: 'create_approval_request',
    description: 'Ask the gate to approve an action. A policy may decide at once; otherwise the request waits for a human (poll get_approval_request).',
    input: {
      action: z.string().min(1).max(200),
      params: jsonObject.optional(),
      context: jsonObject.optional().describe('e.g. {sessionId, agentId} to link it to an observe session'),
      urgency: z.enum(URGENCIES).optional(),
      expiresAt: z.string().optional().describe('ISO 8601 time'),
    },
    readOnly: false,
    route: 'POST /api/requests',
    request: (body) => ({ url: '/api/requests', body }),
  }),
  list_approval_requests: mcpRouteTool({
    name: 'list_approval_requests',
    description: 'List approval requests, newest first: filter by status (pending, approved, denied, expired), action and urgency.',
    input: {
      status: z.enum(['pending', 'approved', 'denied', 'expired']).optional(),
      action: z.string().optional(),
      urgency: z.enum(URGENCIES).optional(),
      limit: z.number().int().min(1).max(500).optional(),
      offset: z.number().int().min(0).optional(),
    },
    readOnly: true,
    route: 'GET /api/requests',
    request: (query) => ({ url: `/api/requests${queryString(query)}` }),
  }),
  get_approval_request: mcpRouteTool({
    name: 'get_approval_request',
    description: 'One approval request: status, parameters, decision and who made it.',
    input: { requestId },
    readOnly: true,
    route: 'GET /api/requests/:id',
    request: ({ requestId }) => ({ url: `/api/requests/${encodeURIComponent(requestId)}` }),
  }),
  decide_approval_request: mcpRouteTool({
    name: 'decide_approval_request',
    description: 'Approve or deny a pending approval request. The gate records the decision as made by the calling key (api:<key name>).',
    input: { requestId, decision: z.enum(['approved', 'denied']), reason: z.string().max(5000).optional() },
    readOnly: false,
    route: 'POST /api/requests/:id/decide',
    request: ({ requestId, ...body }) => ({ url: `/api/requests/${encodeURIComponent(requestId)}/decide`, body }),
  }),
  claude_code_permission_prompt: mcpRouteTool({
    name: 'claude_code_permission_prompt',
    description:
      "Claude Code's --permission-prompt-tool: the tool call becomes an approval request; answers (as JSON text) {behavior: 'allow', updatedInput} or {behavior: 'deny', message}.",
    input: { tool_name: z.string().min(1).max(200), input: jsonObject, tool_use_id: z.string().max(500).optional() },
    readOnly: false,
    route: 'POST /api/claude-code/permission-prompt',
    request: (body) => ({ url: '/api/claude-code/permission-prompt', body }),
    // Claude Code takes only a single text block from its permission prompt tool.
    textOnly: true,
  }),
};
