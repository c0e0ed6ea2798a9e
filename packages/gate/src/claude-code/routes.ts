import { routeOptions, type ZodApp } from '@vigil/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { auditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { URGENCIES } from '../policies/index.ts';
import type { RequestService } from '../requests/index.ts';
import { decideToolCall, type ToolCall, type ToolVerdict } from './decision.ts';

const jsonObject = z.record(z.string(), z.unknown());
/** Claude's identifiers are short; a bound keeps a request's context small. */
const claudeId = z.string().max(500);
const MAX_WAIT_SECONDS = 600;

const waitQuery = {
  wait: z.coerce
    .number()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .optional()
    .describe('Seconds to wait for a human when no policy decided at once (keep it below the hook’s or tool call’s timeout)'),
  expires: z.coerce
    .number()
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .optional()
    .describe('Seconds after which the request expires undecided (it is then denied)'),
  urgency: z.enum(URGENCIES).default('normal'),
};

const hookInput = z
  .looseObject({
    hook_event_name: z.enum(['PreToolUse', 'PermissionRequest']),
    session_id: claudeId,
    tool_name: z.string().trim().min(1).max(200),
    tool_input: jsonObject,
    tool_use_id: claudeId.optional(),
    cwd: z.string().max(4096).optional(),
    agent_id: claudeId.optional(),
  })
  .describe('The hook input Claude Code posts (fields beyond these are accepted and ignored)');

const hookAnswer = z.object({
  hookSpecificOutput: z
    .union([
      z.object({
        hookEventName: z.literal('PreToolUse'),
        permissionDecision: z.enum(['allow', 'deny', 'ask', 'defer']),
        permissionDecisionReason: z.string(),
      }),
      z.object({
        hookEventName: z.literal('PermissionRequest'),
        decision: z.union([
          z.object({ behavior: z.literal('allow'), updatedInput: jsonObject }),
          z.object({ behavior: z.literal('deny'), message: z.string() }),
        ]),
      }),
    ])
    .optional()
    .describe('Absent for a PermissionRequest still pending (with pending=ask or defer): Claude Code then asks its user as usual'),
  systemMessage: z.string().optional(),
});
type HookAnswer = z.infer<typeof hookAnswer>;

const promptAnswer = z.union([
  z.object({ behavior: z.literal('allow'), updatedInput: jsonObject }),
  z.object({ behavior: z.literal('deny'), message: z.string() }),
]);

/** The identifiers of Claude's call kept in the request's context (only those it sent). */
function claudeIds(ids: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(ids).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** Aborted when the client goes away (the response closes before it is sent), so a wait for a human ends with it. */
function abortedWithClient(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => controller.abort());
  return controller.signal;
}

function hookAnswerOf(
  event: 'PreToolUse' | 'PermissionRequest',
  verdict: ToolVerdict,
  input: Record<string, unknown>,
  pending: 'ask' | 'defer' | 'deny',
): HookAnswer {
  if (event === 'PreToolUse') {
    const permissionDecision = verdict.kind === 'pending' ? pending : verdict.kind;
    return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision, permissionDecisionReason: verdict.reason } };
  }
  if (verdict.kind === 'allow') return { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow', updatedInput: input } } };
  if (verdict.kind === 'deny' || pending === 'deny') {
    return { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'deny', message: verdict.reason } } };
  }
  // No decision: Claude Code shows its own permission dialog (a -p run denies).
  return { systemMessage: verdict.reason };
}

export function registerClaudeCodeRoutes(app: ZodApp, ctx: GateContext, requests: RequestService): void {
  const decide = (
    request: FastifyRequest,
    reply: FastifyReply,
    call: ToolCall,
    query: { wait?: number; expires?: number; urgency: (typeof URGENCIES)[number] },
    waitSeconds: number,
  ) =>
    decideToolCall(
      ctx,
      requests,
      call,
      auditActor(request),
      { waitMs: (query.wait ?? waitSeconds) * 1000, urgency: query.urgency, ...(query.expires !== undefined && { expiresInMs: query.expires * 1000 }) },
      abortedWithClient(reply),
      request.log,
    );

  app.post(
    '/api/hooks/claude-code',
    routeOptions('request:create', {
      operationId: 'claudeCodeHook',
      summary: 'Claude Code HTTP hook (PreToolUse, PermissionRequest): each tool call becomes an approval request the policies decide',
      description:
        'Configure it as an `http` hook in `.claude/settings.json` (docs/guide/claude-code.md). The request’s action is the tool’s name, ' +
        'its params the tool input, its context `{via: "claude-code", claudeCode: {sessionId, toolUseId, cwd}}`. Approved → allow; ' +
        'denied, expired or any failure → deny with the reason; still pending after `wait` seconds → `pending` ' +
        '(PreToolUse: ask, defer or deny; PermissionRequest: deny, or no decision so Claude Code asks its user).',
      tags: ['claude-code'],
      querystring: z.object({
        ...waitQuery,
        pending: z
          .enum(['ask', 'defer', 'deny'])
          .default('ask')
          .describe('The answer while a human has not decided: ask (interactive), defer (claude -p), deny'),
      }),
      body: hookInput,
      response: { 200: hookAnswer },
    }),
    async (request, reply) => {
      const body = request.body;
      const call: ToolCall = {
        toolName: body.tool_name,
        input: body.tool_input,
        claudeCode: claudeIds({
          sessionId: body.session_id,
          toolUseId: body.tool_use_id,
          cwd: body.cwd,
          agentId: body.agent_id,
          hookEvent: body.hook_event_name,
        }),
      };
      const verdict = await decide(request, reply, call, request.query, 0);
      return hookAnswerOf(body.hook_event_name, verdict, body.tool_input, request.query.pending);
    },
  );

  app.post(
    '/api/claude-code/permission-prompt',
    routeOptions('request:create', {
      operationId: 'claudeCodePermissionPrompt',
      summary: 'Claude Code --permission-prompt-tool: answers {behavior: allow, updatedInput} or {behavior: deny, message}',
      description:
        'What the MCP tool `claude_code_permission_prompt` of POST /mcp calls. The tool call becomes an approval request (as for the hook); ' +
        'the answer waits up to `wait` seconds (default `CLAUDE_CODE_PROMPT_WAIT_SECONDS`, 55) for a human. Allow carries exactly the approved input; ' +
        'denied, expired, still pending or any failure → deny with the reason.',
      tags: ['claude-code'],
      querystring: z.object(waitQuery),
      body: z.looseObject({ tool_name: z.string().trim().min(1).max(200), input: jsonObject, tool_use_id: claudeId.optional() }),
      response: { 200: promptAnswer },
    }),
    async (request, reply) => {
      const { tool_name: toolName, input, tool_use_id: toolUseId } = request.body;
      const verdict = await decide(
        request,
        reply,
        { toolName, input, claudeCode: claudeIds({ toolUseId }) },
        request.query,
        ctx.config.claudeCodePromptWaitSeconds,
      );
      return verdict.kind === 'allow' ? { behavior: 'allow' as const, updatedInput: input } : { behavior: 'deny' as const, message: verdict.reason };
    },
  );
}
