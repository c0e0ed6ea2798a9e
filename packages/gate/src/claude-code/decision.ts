import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import type { RequestRow, RequestService } from '../requests/index.ts';
import type { Urgency } from '../policies/index.ts';

/** How often a call waiting for a human reads its request again. */
const POLL_MS = 200;

/** One tool call Claude Code asks permission for, as the gate sees it. */
export interface ToolCall {
  toolName: string;
  input: Record<string, unknown>;
  /** Claude's own identifiers (session_id, tool_use_id, cwd, ...), kept in the request's context. */
  claudeCode: Record<string, string>;
}

export interface AskOptions {
  /** How long to wait for a human before answering that the request is still pending. */
  waitMs: number;
  /** The request's lifetime (its expiresAt), when given. */
  expiresInMs?: number;
  urgency: Urgency;
}

/** The outcome the adapters translate into Claude Code's answers. */
export type ToolVerdict =
  | { kind: 'allow'; requestId: string; reason: string }
  | { kind: 'deny'; requestId: string | null; reason: string }
  | { kind: 'pending'; requestId: string; reason: string };

/**
 * Creates the gate request for a tool call (the policies may decide it at once), waits up to
 * `waitMs` for a human, and answers the verdict. Any failure is a deny (fail closed): a tool call
 * is allowed only by a request the gate holds as approved.
 */
export async function decideToolCall(
  ctx: GateContext,
  requests: RequestService,
  call: ToolCall,
  by: AuditActor,
  options: AskOptions,
  signal: AbortSignal,
  log: { error(details: object, message: string): void },
): Promise<ToolVerdict> {
  let row: RequestRow;
  try {
    row = await requests.create(
      {
        action: call.toolName,
        params: call.input,
        context: { via: 'claude-code', claudeCode: call.claudeCode },
        urgency: options.urgency,
        expiresAt: options.expiresInMs === undefined ? null : ctx.clock.now() + options.expiresInMs,
      },
      by,
    );
    const deadline = performance.now() + options.waitMs;
    while (row.status === 'pending' && !signal.aborted && performance.now() < deadline) {
      await sleep(Math.min(POLL_MS, deadline - performance.now()));
      row = (await requests.get(row.id)) ?? row;
    }
  } catch (error) {
    log.error({ err: error, toolName: call.toolName }, 'claude-code: no decision, the tool call is denied');
    return { kind: 'deny', requestId: null, reason: `Vigil could not decide this call (${(error as Error).message}); it is denied.` };
  }
  return verdictOf(row);
}

function verdictOf(row: RequestRow): ToolVerdict {
  const why = row.decision_reason === null ? '' : `: ${row.decision_reason}`;
  switch (row.status) {
    case 'approved':
      return { kind: 'allow', requestId: row.id, reason: `Approved in Vigil by ${row.decided_by} (request ${row.id})${why}` };
    case 'pending':
      return { kind: 'pending', requestId: row.id, reason: `Waiting for a human to decide in Vigil (request ${row.id})` };
    case 'expired':
      return { kind: 'deny', requestId: row.id, reason: `Vigil request ${row.id} expired without a decision; the call is denied` };
    default:
      return { kind: 'deny', requestId: row.id, reason: `Denied in Vigil by ${row.decided_by} (request ${row.id})${why}` };
  }
}
