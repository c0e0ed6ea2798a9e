import type { ObserveSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { observe } from '../api.ts';
import { AsyncTable, CreateForm, ManagedTable, rowButton, TextField, type Column } from '../components.tsx';
import { fmtDateTime, fmtNumber, timeAgo } from '../format.ts';
import { Badge, Field, Page, Pager, Section, useAction, useAsync } from '../ui.tsx';

type AlertRule = ObserveSchemas.AlertRule;
type Condition = AlertRule['condition'];
type HistoryEntry = ObserveSchemas.AlertHistoryEntry;

const CONDITIONS: Record<Condition, { label: string; unit: string }> = {
  error_rate_exceeds: { label: 'Error rate exceeds', unit: 'ratio 0–1 (0.1 = 10%)' },
  cost_exceeds: { label: 'Spend exceeds', unit: 'USD in the window' },
  latency_exceeds: { label: 'Tool latency exceeds', unit: 'milliseconds (mean)' },
  event_count_exceeds: { label: 'Event count exceeds', unit: 'events in the window' },
  no_events_for: { label: 'No events for', unit: 'minutes' },
};

function describe(rule: Pick<AlertRule, 'condition' | 'threshold' | 'windowMinutes'>): string {
  if (rule.condition === 'no_events_for') return `No events for ${rule.threshold} minutes`;
  return `${CONDITIONS[rule.condition].label} ${rule.threshold} (${CONDITIONS[rule.condition].unit}) over ${rule.windowMinutes} min`;
}

function NewRule({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [condition, setCondition] = useState<Condition>('error_rate_exceeds');
  const [threshold, setThreshold] = useState('0.1');
  const [windowMinutes, setWindowMinutes] = useState('15');
  const [agentId, setAgentId] = useState('');
  const [channel, setChannel] = useState('');
  const create = async () => {
    const rule = await observe('POST /api/alerts/rules', {
      body: {
        name,
        condition,
        threshold: Number(threshold),
        windowMinutes: Number(windowMinutes),
        ...(agentId.trim() && { scope: { agentId: agentId.trim() } }),
        ...(channel.trim() && { notifyChannels: [channel.trim()] }),
      },
    });
    setName('');
    onCreated();
    return `Rule “${rule.name}” created; it is evaluated every minute.`;
  };
  return (
    <CreateForm create={create} submit="Create rule" pending="Creating…" failure="The rule was not created">
      <div className="form-grid">
        <TextField id="alert-name" label="Name" required maxLength={200} value={name} onChange={setName} />
        <Field label="Condition" htmlFor="alert-condition">
          <select id="alert-condition" value={condition} onChange={(e) => setCondition(e.target.value as Condition)}>
            {Object.entries(CONDITIONS).map(([value, c]) => (
              <option key={value} value={value}>
                {c.label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Threshold" htmlFor="alert-threshold" hint={CONDITIONS[condition].unit}>
          <input id="alert-threshold" type="number" step="any" min={0} required value={threshold} onChange={(e) => setThreshold(e.target.value)} aria-describedby="alert-threshold-hint" />
        </Field>
        <Field label="Window (minutes)" htmlFor="alert-window">
          <input id="alert-window" type="number" min={1} max={43200} required value={windowMinutes} onChange={(e) => setWindowMinutes(e.target.value)} />
        </Field>
        <TextField id="alert-agent" label="Only this agent (optional)" value={agentId} onChange={setAgentId} />
        <Field label="Notify URL (optional)" htmlFor="alert-channel">
          <input id="alert-channel" type="url" value={channel} placeholder="https://hooks.example.com/vigil" onChange={(e) => setChannel(e.target.value)} />
        </Field>
      </div>
    </CreateForm>
  );
}

const RULE_COLUMNS: Column<AlertRule>[] = [
  { header: 'Name', cell: (r) => r.name },
  { header: 'Condition', cell: describe },
  { header: 'Scope', cell: (r) => `${r.scope.agentId ? `agent ${r.scope.agentId}` : 'all agents'}${r.scope.tags?.length ? ` · tags ${r.scope.tags.join(', ')}` : ''}` },
  { header: 'Notifies', className: 'clip', cell: (r) => (r.notifyChannels.length ? r.notifyChannels.join(', ') : <span className="muted">no channel</span>) },
  { header: 'State', cell: (r) => (r.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>) },
];

function historyColumns(names: Map<string, string>): Column<HistoryEntry>[] {
  return [
    { header: 'Rule', cell: (e) => names.get(e.ruleId) ?? <span className="muted">deleted rule</span> },
    { header: 'Fired', title: (e) => fmtDateTime(e.triggeredAt), cell: (e) => timeAgo(e.triggeredAt) },
    { header: 'Resolved', cell: (e) => (e.resolvedAt ? fmtDateTime(e.resolvedAt) : <Badge tone="bad">open</Badge>) },
    { header: 'Value', num: true, cell: (e) => fmtNumber(e.currentValue, 4) },
    { header: 'Threshold', num: true, cell: (e) => fmtNumber(e.threshold, 4) },
    { header: 'Notified', cell: (e) => (e.notified ? 'yes' : 'no') },
  ];
}

export function AlertsPage() {
  const rules = useAsync((signal) => observe('GET /api/alerts/rules', { signal }), []);
  const [offset, setOffset] = useState(0);
  const history = useAsync((signal) => observe('GET /api/alerts/history', { query: { limit: 25, offset }, signal }), [offset], {
    pollMs: 15_000,
  });
  const names = new Map(rules.data?.rules.map((r) => [r.id, r.name]) ?? []);
  const toggle = useAction(async (rule: AlertRule) => {
    await observe('PUT /api/alerts/rules/{id}', { params: { id: rule.id }, body: { enabled: !rule.enabled } });
    rules.reload();
  });
  const remove = useAction(async (rule: AlertRule) => {
    if (!window.confirm(`Delete the alert rule “${rule.name}”? Its history is kept.`)) return;
    await observe('DELETE /api/alerts/rules/{id}', { params: { id: rule.id } });
    rules.reload();
    history.reload();
  });

  return (
    <Page title="Alerts" subtitle="Rules measured every minute over a sliding window; a rule fires when its value goes above the threshold and resolves when it drops back.">
      <Section title="Rules">
        <ManagedTable
          state={rules}
          rows={(d) => d.rules}
          empty="No alert rules yet. Create one below."
          columns={RULE_COLUMNS}
          rowKey={(r) => r.id}
          subject={(r) => r.name}
          actions={[toggle, remove]}
          buttons={(r) => [rowButton(r.enabled ? 'Disable' : 'Enable', toggle, [r]), rowButton('Delete', remove, [r], { danger: true })]}
        />
      </Section>
      <Section title="New rule">
        <NewRule onCreated={rules.reload} />
      </Section>
      <Section title="History">
        <AsyncTable
          state={history}
          rows={(d) => d.entries}
          empty="No alert has fired yet."
          columns={historyColumns(names)}
          rowKey={(e) => e.id}
          after={(d) => <Pager label="Alert history" offset={offset} limit={25} total={d.total} onChange={setOffset} />}
        />
      </Section>
    </Page>
  );
}
