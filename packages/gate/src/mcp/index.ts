// The gate's tools over MCP Streamable HTTP at /mcp (docs/guide/mcp.md): each one calls one gate route.
import { defineFeature, registerMcpEndpoint, VIGIL_VERSION } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { GATE_MCP_TOOLS } from './tools.ts';

export const mcpFeature: GateFeature = defineFeature('mcp', ({ app, context }) =>
  registerMcpEndpoint(app, {
    name: 'vigil-gate',
    version: VIGIL_VERSION,
    tools: Object.values(GATE_MCP_TOOLS),
    scope: 'any',
    listenHost: context.config.host,
  }),
);
