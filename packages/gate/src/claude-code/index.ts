// Claude Code's permission checks answered by the gate (docs/guide/claude-code.md): its HTTP hooks
// (PreToolUse, PermissionRequest) and the --permission-prompt-tool call, each a gate request.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import type { RequestService } from '../requests/index.ts';
import { registerClaudeCodeRoutes } from './routes.ts';

export const claudeCodeFeature = (requests: RequestService): GateFeature =>
  defineFeature('claude-code', ({ app, context }) => registerClaudeCodeRoutes(app, context, requests));
