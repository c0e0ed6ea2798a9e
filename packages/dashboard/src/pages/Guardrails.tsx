import { useState, type FormEvent } from 'react';
import { observe } from '../api.ts';
import { Link } from '../router.tsx';
import { Async, Badge, ErrorMessage, Field, fmtDateTime, fmtNumber, Notice, Page, Pager, RowAction, Section, timeAgo, useAction, useAsync } from '../ui.tsx';

interface GuardrailRule {
  id: string;
  name: string;
  agentId: string | null;
  conditionType: string;
  conditionConfig: Record<string, unknown>;
  actionType: string;
  actionConfig: Record<string, unknown>;
  cooldownMinutes: number;
  enabled: boolean;
  dryRun: boolean;
  triggerCount: number;
  lastTriggeredAt: string | null;
}

interface Trigger {
  id: string;
  ruleId: string;
  ruleName: string;
  agentId: string;
  triggeredAt: string;
  conditionType: string;
  currentValue: number;
  threshold: number;
  actionType: string;
  dryRun: boolean;
  actionResult: { status: 'applied' | 'queued' | 'dry_run'; detail: string };
}

function describeCondition(type: string, c: Record<string, unknown>): string {
  switch (type) {
    case 'error_rate_threshold':
      return `error rate above ${String(c.threshold)}% over ${Math.round(Number(c.windowMs) / 60_000)} min`;
    case 'cost_limit':
      return `spend above $${String(c.maxCostUsd)} over ${Math.round(Number(c.periodMs) / 3_600_000)} h`;
    case 'health_score_threshold':
      return `${c.dimension ? `${String(c.dimension)} score` : 'health score'} below ${String(c.minScore)}`;
    case 'custom_metric':
      return `${String(c.metricKey)} ${String(c.operator)} ${String(c.value)}`;
    default:
      return type;
  }
}

function describeAction(type: string, c: Record<string, unknown>): string {
  switch (type) {
    case 'pause_agent':
      return `pause the agent${c.reason ? ` (“${String(c.reason)}”)` : ''}`;
    case 'notify_webhook':
      return `notify ${String(c.url)}`;
    case 'downgrade_model':
      return `switch the model to ${String(c.targetModel)}`;
    case 'approval_policy':
      return `require approval policy ${String(c.policyId)}`;
    default:
      return type;
  }
}

const CONDITION_FIELDS: Record<string, { name: string; label: string; type: 'number' | 'text' | 'select'; options?: string[]; initial: string }[]> = {
  error_rate_threshold: [
    { name: 'threshold', label: 'Error rate above (%)', type: 'number', initial: '20' },
    { name: 'windowMs', label: 'Window (ms)', type: 'number', initial: '300000' },
  ],
  cost_limit: [
    { name: 'maxCostUsd', label: 'Spend above (USD)', type: 'number', initial: '10' },
    { name: 'periodMs', label: 'Period (ms)', type: 'number', initial: '86400000' },
  ],
  health_score_threshold: [
    { name: 'minScore', label: 'Score below', type: 'number', initial: '60' },
    { name: 'dimension', label: 'Dimension', type: 'select', options: ['', 'error_rate', 'cost_efficiency', 'tool_success', 'latency', 'completion_rate'], initial: '' },
  ],
  custom_metric: [
    { name: 'metricKey', label: 'Metric key (dot path)', type: 'text', initial: 'quality.score' },
    { name: 'operator', label: 'Operator', type: 'select', options: ['gt', 'gte', 'lt', 'lte', 'eq'], initial: 'lt' },
    { name: 'value', label: 'Value', type: 'number', initial: '0.5' },
  ],
};

const ACTION_FIELDS: Record<string, { name: string; label: string; initial: string; optional?: boolean }[]> = {
  pause_agent: [{ name: 'reason', label: 'Reason (optional)', initial: '', optional: true }],
  notify_webhook: [{ name: 'url', label: 'Webhook URL', initial: 'https://' }],
  downgrade_model: [{ name: 'targetModel', label: 'Target model', initial: 'gpt-4o-mini' }],
  approval_policy: [{ name: 'policyId', label: 'Gate policy id', initial: '' }],
};

function NewGuardrail({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [agentId, setAgentId] = useState('');
  const [conditionType, setConditionType] = useState('error_rate_threshold');
  const [actionType, setActionType] = useState('pause_agent');
  const [values, setValues] = useState<Record<string, string>>({});
  const [dryRun, setDryRun] = useState(true);
  const [done, setDone] = useState<string | null>(null);
  const value = (key: string, initial: string) => values[key] ?? initial;
  const create = useAction(async () => {
    const conditionConfig: Record<string, unknown> = {};
    for (const f of CONDITION_FIELDS[conditionType] ?? []) {
      const v = value(`c.${f.name}`, f.initial);
      if (v === '') continue;
      conditionConfig[f.name] = f.type === 'number' ? Number(v) : v;
    }
    const actionConfig: Record<string, unknown> = {};
    for (const f of ACTION_FIELDS[actionType] ?? []) {
      const v = value(`a.${f.name}`, f.initial).trim();
      if (v !== '' || !f.optional) actionConfig[f.name] = v;
    }
    const rule = await observe<GuardrailRule>('/guardrails', {
      method: 'POST',
      body: { name, ...(agentId.trim() && { agentId: agentId.trim() }), conditionType, conditionConfig, actionType, actionConfig, dryRun },
    });
    setDone(`Guardrail “${rule.name}” created${rule.dryRun ? ' in dry-run mode: it records triggers without acting' : ''}.`);
    setName('');
    onCreated();
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    void create.run();
  };
  return (
    <form onSubmit={submit} className="stack">
      <div className="form-grid">
        <Field label="Name" htmlFor="gr-name">
          <input id="gr-name" required value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field label="Agent (empty: every agent)" htmlFor="gr-agent">
          <input id="gr-agent" value={agentId} onChange={(e) => setAgentId(e.target.value)} />
        </Field>
        <Field label="When" htmlFor="gr-condition">
          <select id="gr-condition" value={conditionType} onChange={(e) => setConditionType(e.target.value)}>
            <option value="error_rate_threshold">Error rate above a threshold</option>
            <option value="cost_limit">Spend above a limit</option>
            <option value="health_score_threshold">Health score below a minimum</option>
            <option value="custom_metric">A custom metric crosses a value</option>
          </select>
        </Field>
        {(CONDITION_FIELDS[conditionType] ?? []).map((f) => (
          <Field key={f.name} label={f.label} htmlFor={`gr-c-${f.name}`}>
            {f.type === 'select' ? (
              <select id={`gr-c-${f.name}`} value={value(`c.${f.name}`, f.initial)} onChange={(e) => setValues((v) => ({ ...v, [`c.${f.name}`]: e.target.value }))}>
                {f.options!.map((o) => (
                  <option key={o} value={o}>
                    {o || 'overall'}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={`gr-c-${f.name}`}
                type={f.type}
                step="any"
                value={value(`c.${f.name}`, f.initial)}
                onChange={(e) => setValues((v) => ({ ...v, [`c.${f.name}`]: e.target.value }))}
              />
            )}
          </Field>
        ))}
        <Field label="Then" htmlFor="gr-action">
          <select id="gr-action" value={actionType} onChange={(e) => setActionType(e.target.value)}>
            <option value="pause_agent">Pause the agent</option>
            <option value="notify_webhook">Call a webhook</option>
            <option value="downgrade_model">Switch to a cheaper model</option>
            <option value="approval_policy">Require an approval policy</option>
          </select>
        </Field>
        {(ACTION_FIELDS[actionType] ?? []).map((f) => (
          <Field key={f.name} label={f.label} htmlFor={`gr-a-${f.name}`}>
            <input id={`gr-a-${f.name}`} value={value(`a.${f.name}`, f.initial)} onChange={(e) => setValues((v) => ({ ...v, [`a.${f.name}`]: e.target.value }))} />
          </Field>
        ))}
      </div>
      <label className="checkbox">
        <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> Dry run: record triggers but take no action
      </label>
      <div>
        <button type="submit" disabled={create.pending}>
          {create.pending ? 'Creating…' : 'Create guardrail'}
        </button>
      </div>
      {create.error && <ErrorMessage error={create.error} title="The guardrail was not created" />}
      {done && <Notice>{done}</Notice>}
    </form>
  );
}

export function GuardrailsPage() {
  const rules = useAsync((signal) => observe<{ rules: GuardrailRule[] }>('/guardrails', { signal }), [], { pollMs: 15_000 });
  const [offset, setOffset] = useState(0);
  const history = useAsync((signal) => observe<{ triggers: Trigger[]; total: number }>('/guardrails/history', { query: { limit: 25, offset }, signal }), [offset], {
    pollMs: 15_000,
  });
  const update = useAction(async (rule: GuardrailRule, change: Partial<Pick<GuardrailRule, 'enabled' | 'dryRun'>>) => {
    await observe(`/guardrails/${rule.id}`, { method: 'PUT', body: change });
    rules.reload();
  });
  const remove = useAction(async (rule: GuardrailRule) => {
    if (!window.confirm(`Delete the guardrail “${rule.name}”? Its triggers are kept.`)) return;
    await observe(`/guardrails/${rule.id}`, { method: 'DELETE' });
    rules.reload();
  });

  return (
    <Page title="Guardrails" subtitle="Rules that watch each agent after every batch of events (and every 30 s) and act when a condition is breached.">
      <Section title="Rules">
        {(update.error ?? remove.error) && <ErrorMessage error={(update.error ?? remove.error)!} />}
        <Async state={rules} isEmpty={(d) => d.rules.length === 0} empty="No guardrails yet. Create one below; start in dry-run mode to see what it would do.">
          {(data) => (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Agent</th>
                  <th scope="col">When</th>
                  <th scope="col">Then</th>
                  <th scope="col" className="num">Triggers</th>
                  <th scope="col">Mode</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.rules.map((r) => (
                  <tr key={r.id}>
                    <td>{r.name}</td>
                    <td>{r.agentId ? <Link to={`/agents/${encodeURIComponent(r.agentId)}`}>{r.agentId}</Link> : <span className="muted">every agent</span>}</td>
                    <td>{describeCondition(r.conditionType, r.conditionConfig)}</td>
                    <td>
                      {describeAction(r.actionType, r.actionConfig)}
                      <div className="muted small">cooldown {r.cooldownMinutes} min</div>
                    </td>
                    <td className="num">
                      {fmtNumber(r.triggerCount)}
                      {r.lastTriggeredAt && <div className="muted small">last {timeAgo(r.lastTriggeredAt)}</div>}
                    </td>
                    <td>
                      {!r.enabled ? <Badge>disabled</Badge> : r.dryRun ? <Badge tone="info">dry run</Badge> : <Badge tone="good">active</Badge>}
                    </td>
                    <td className="actions">
                      <RowAction tone="secondary" label={r.enabled ? 'Disable' : 'Enable'} subject={r.name} onClick={() => void update.run(r, { enabled: !r.enabled })} disabled={update.pending} />
                      <RowAction tone="secondary" label={r.dryRun ? 'Arm' : 'Dry run'} subject={r.name} onClick={() => void update.run(r, { dryRun: !r.dryRun })} disabled={update.pending} />
                      <RowAction tone="danger" label="Delete" subject={r.name} onClick={() => void remove.run(r)} disabled={remove.pending} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Async>
      </Section>
      <Section title="New guardrail">
        <NewGuardrail onCreated={rules.reload} />
      </Section>
      <Section title="Triggers">
        <Async state={history} isEmpty={(d) => d.triggers.length === 0} empty="No guardrail has triggered yet.">
          {(data) => (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Rule</th>
                    <th scope="col">Agent</th>
                    <th scope="col" className="num">Value</th>
                    <th scope="col" className="num">Threshold</th>
                    <th scope="col">Action</th>
                    <th scope="col">Outcome</th>
                  </tr>
                </thead>
                <tbody>
                  {data.triggers.map((t) => (
                    <tr key={t.id}>
                      <td title={fmtDateTime(t.triggeredAt)}>{timeAgo(t.triggeredAt)}</td>
                      <td>{t.ruleName}</td>
                      <td>
                        <Link to={`/agents/${encodeURIComponent(t.agentId)}`}>{t.agentId}</Link>
                      </td>
                      <td className="num">{fmtNumber(t.currentValue, 4)}</td>
                      <td className="num">{fmtNumber(t.threshold, 4)}</td>
                      <td>{t.actionType}</td>
                      <td>
                        <Badge tone={t.actionResult.status === 'applied' ? 'good' : t.actionResult.status === 'dry_run' ? 'info' : 'warn'}>{t.actionResult.status.replace('_', ' ')}</Badge>{' '}
                        <span className="muted small">{t.actionResult.detail}</span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager label="Guardrail triggers" offset={offset} limit={25} total={data.total} onChange={setOffset} />
            </>
          )}
        </Async>
      </Section>
    </Page>
  );
}
