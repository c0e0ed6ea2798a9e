import { fmtActor, fmtDuration, fmtScore, fmtUsd, plural } from './format.ts';
import { Badge, type Tone } from './ui.tsx';

/** One line that says what an event is about, per event type (payload fields: docs/api.md#event-types). */
export function summarize(eventType: string, payload: Record<string, unknown>): string {
  const p = payload;
  const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
  const cut = (text: string, n = 120): string => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
  switch (eventType) {
    case 'session_started':
      return cut(`${str(p.agentName) || 'session started'}${Array.isArray(p.tags) && p.tags.length ? ` · tags ${p.tags.join(', ')}` : ''}`);
    case 'session_ended':
      return cut(`ended: ${str(p.reason)}${p.summary ? ` · ${str(p.summary)}` : ''}`);
    case 'tool_call':
      return cut(`${str(p.toolName)}(${cut(str(p.arguments), 80)})`);
    case 'tool_response':
      return cut(`${str(p.toolName)} → ${cut(str(p.result), 80)} · ${fmtDuration(Number(p.durationMs))}`);
    case 'tool_error':
      return cut(`${str(p.toolName)} failed: ${str(p.error)}${p.errorCode ? ` (${str(p.errorCode)})` : ''}`);
    case 'llm_call':
      return cut(`${str(p.provider)}/${str(p.model)} · ${plural(Array.isArray(p.messages) ? p.messages.length : 0, 'message')}`);
    case 'llm_response':
      return cut(`${str(p.model)}: ${cut(str(p.completion), 70)} · ${fmtUsd(Number(p.costUsd))} · ${fmtDuration(Number(p.latencyMs))}`);
    case 'cost_tracked':
      return cut(`${str(p.provider)}/${str(p.model)} · ${fmtUsd(Number(p.costUsd))}`);
    case 'approval_requested':
      return cut(`asked to ${str(p.action)} (${str(p.urgency)})`);
    case 'approval_granted':
    case 'approval_denied':
    case 'approval_expired':
      return cut(`${str(p.action)} ${eventType.replace('approval_', '')} by ${fmtActor(str(p.decidedBy))}${p.reason ? `: ${str(p.reason)}` : ''}`);
    case 'form_submitted':
      return cut(`form ${str(p.formName) || str(p.formId)} submitted (${plural(Number(p.fieldCount) || 0, 'field')})`);
    case 'form_completed':
      return cut(`form ${str(p.formId)} completed by ${str(p.completedBy)}`);
    case 'form_expired':
      return cut(`form ${str(p.formId)} expired`);
    case 'alert_triggered':
      return cut(`${str(p.alertName)}: ${str(p.message)}`);
    case 'alert_resolved':
      return cut(`${str(p.alertName)} resolved${p.resolvedBy ? ` (${str(p.resolvedBy)})` : ''}`);
    case 'eval_result':
      return cut(
        `${p.method === 'llm_judge' ? 'AI judgment' : 'compliance check'}: ${p.passed ? 'passed' : 'failed'} · score ${typeof p.score === 'number' ? fmtScore(p.score) : '—'}`,
      );
    case 'custom':
      return cut(`${str(p.type)}: ${cut(str(p.data), 90)}`);
    default:
      return cut(str(p), 120);
  }
}

const TYPE_TONES: Record<string, Tone> = {
  tool_error: 'bad',
  approval_denied: 'bad',
  alert_triggered: 'warn',
  approval_requested: 'warn',
  approval_granted: 'good',
  eval_result: 'info',
  session_started: 'info',
  session_ended: 'neutral',
};

export function EventTypeBadge({ type }: { type: string }) {
  return <Badge tone={TYPE_TONES[type] ?? 'neutral'}>{type}</Badge>;
}

export function SeverityBadge({ severity }: { severity: string }) {
  const tone: Tone = severity === 'error' || severity === 'critical' ? 'bad' : severity === 'warn' ? 'warn' : 'neutral';
  return severity === 'info' ? <span className="muted">info</span> : <Badge tone={tone}>{severity}</Badge>;
}
