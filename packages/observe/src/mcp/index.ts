// observe's tools over MCP Streamable HTTP at /mcp (docs/guide/mcp.md): each one calls one observe route.
import { defineFeature, registerMcpEndpoint, VIGIL_VERSION } from '@vigil/platform';
import { OBSERVE_SCOPES } from '../auth/index.ts';
import type { ObserveFeature } from '../context.ts';
import { OBSERVE_MCP_TOOLS } from './tools.ts';

export const mcpFeature: ObserveFeature = defineFeature('mcp', ({ app, context }) =>
  registerMcpEndpoint(app, {
    name: 'vigil-observe',
    version: VIGIL_VERSION,
    tools: Object.values(OBSERVE_MCP_TOOLS),
    scope: OBSERVE_SCOPES,
    listenHost: context.config.host,
  }),
);
