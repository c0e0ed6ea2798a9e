import type { ObserveSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { observe } from '../api.ts';
import { AsyncTable, type Column, CreateForm, EditOrCreateSection, useEditOrCreate, ManagedTable, rowButton, TextField } from '../components.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtPercent, fmtUsd, fmtWindow, plural, timeAgo } from '../format.ts';
import { Badge, Field, Notice, Page, Pager, Section, useAction, useAsync } from '../ui.tsx';

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

/** A threshold in its condition's unit: "10.0%", "$5.00", "1.50 s", "120 events", "30 minutes". */
function thresholdText(condition: Condition, threshold: number): string {
  switch (condition) {
    case 'error_rate_exceeds':
      return fmtPercent(threshold);
    case 'cost_exceeds':
      return fmtUsd(threshold);
    case 'latency_exceeds':
      return fmtDuration(threshold);
    case 'event_count_exceeds':
      return plural(threshold, 'event');
    case 'no_events_for':
      return fmtWindow(threshold);
  }
}

function describe(rule: Pick<AlertRule, 'condition' | 'threshold' | 'windowMinutes'>): string {
  if (rule.condition === 'no_events_for') return `No events for ${thresholdText(rule.condition, rule.threshold)}`;
  return `${CONDITIONS[rule.condition].label} ${thresholdText(rule.condition, rule.threshold)} over ${fmtWindow(rule.windowMinutes)}`;
}

/** Creates a rule, or with `rule` edits that one: the form starts with its values and saves them with PUT. */
function RuleForm({ rule, onSaved, onCancel }: { rule?: AlertRule; onSaved: (message: string) => void; onCancel?: () => void }) {
  const [name, setName] = useState(rule?.name ?? '');
  const [condition, setCondition] = useState<Condition>(rule?.condition ?? 'error_rate_exceeds');
  const [threshold, setThreshold] = useState(String(rule?.threshold ?? '0.1'));
  const [windowMinutes, setWindowMinutes] = useState(String(rule?.windowMinutes ?? '15'));
  const [agentId, setAgentId] = useState(rule?.scope.agentId ?? '');
  const [channels, setChannels] = useState(rule?.notifyChannels.join('\n') ?? '');
  const save = async () => {
    const notifyChannels = channels.split(/\s+/).filter(Boolean);
    const definition = { name, condition, threshold: Number(threshold), windowMinutes: Number(windowMinutes) };
    if (rule) {
      // The scope's tags (set through the API) are kept; only the agent is edited here.
      const { agentId: _previous, ...rest } = rule.scope;
      const scope = agentId.trim() ? { ...rest, agentId: agentId.trim() } : rest;
      const saved = await observe('PUT /api/alerts/rules/{id}', { params: { id: rule.id }, body: { ...definition, scope, notifyChannels } });
      onSaved(`Rule “${saved.name}” saved: ${describe(saved)}.`);
      return '';
    }
    const created = await observe('POST /api/alerts/rules', {
      body: { ...definition, ...(agentId.trim() && { scope: { agentId: agentId.trim() } }), notifyChannels },
    });
    setName('');
    onSaved('');
    return `Rule “${created.name}” created; it is evaluated every minute.`;
  };
  const id = (field: string) => `alert-${rule ? 'edit-' : ''}${field}`;
  return (
    <CreateForm
      create={save}
      submit={rule ? 'Save rule' : 'Create rule'}
      pending={rule ? 'Saving…' : 'Creating…'}
      failure={rule ? 'The rule was not saved' : 'The rule was not created'}
      cancel={onCancel}
      label={rule ? `Edit rule ${rule.name}` : 'New rule'}
    >
      <div className="form-grid">
        <TextField id={id('name')} label="Name" required maxLength={200} value={name} onChange={setName} />
        <Field label="Condition" htmlFor={id('condition')}>
          <select value={condition} onChange={(e) => setCondition(e.target.value as Condition)}>
            {Object.entries(CONDITIONS).map(([value, c]) => (
              <option key={value} value={value}>
                {c.label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Threshold" htmlFor={id('threshold')} hint={CONDITIONS[condition].unit}>
          <input type="number" step="any" min={0} required value={threshold} onChange={(e) => setThreshold(e.target.value)} />
        </Field>
        <Field label="Window (minutes)" htmlFor={id('window')}>
          <input type="number" min={1} max={43200} required value={windowMinutes} onChange={(e) => setWindowMinutes(e.target.value)} />
        </Field>
        <TextField id={id('agent')} label="Only this agent (optional)" value={agentId} onChange={setAgentId} />
        <Field label="Notify URLs (optional, one a line)" htmlFor={id('channels')}>
          <textarea rows={2} value={channels} placeholder="https://hooks.example.com/vigil" onChange={(e) => setChannels(e.target.value)} />
        </Field>
      </div>
    </CreateForm>
  );
}

const RULE_COLUMNS: Column<AlertRule>[] = [
  { header: 'Name', cell: (r) => r.name },
  { header: 'Condition', cell: describe },
  {
    header: 'Scope',
    cell: (r) => `${r.scope.agentId ? `agent ${r.scope.agentId}` : 'all agents'}${r.scope.tags?.length ? ` · tags ${r.scope.tags.join(', ')}` : ''}`,
  },
  { header: 'Notifies', className: 'clip', cell: (r) => (r.notifyChannels.length ? r.notifyChannels.join(', ') : <span className="muted">no channel</span>) },
  { header: 'State', cell: (r) => (r.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>) },
];

/** A measured value or threshold in its rule's unit (as thresholdText), or a plain number once the rule is deleted. */
const valueText = (rule: AlertRule | undefined, value: number): string => (rule ? thresholdText(rule.condition, value) : fmtNumber(value, 4));

function historyColumns(rules: Map<string, AlertRule>): Column<HistoryEntry>[] {
  return [
    { header: 'Rule', cell: (e) => rules.get(e.ruleId)?.name ?? <span className="muted">deleted rule</span> },
    { header: 'Fired', title: (e) => fmtDateTime(e.triggeredAt), cell: (e) => timeAgo(e.triggeredAt) },
    { header: 'Resolved', cell: (e) => (e.resolvedAt ? fmtDateTime(e.resolvedAt) : <Badge tone="bad">open</Badge>) },
    { header: 'Value', num: true, cell: (e) => valueText(rules.get(e.ruleId), e.currentValue) },
    { header: 'Threshold', num: true, cell: (e) => valueText(rules.get(e.ruleId), e.threshold) },
    { header: 'Notified', cell: (e) => (e.notified ? 'yes' : 'no') },
  ];
}

export function AlertsPage() {
  const rules = useAsync((signal) => observe('GET /api/alerts/rules', { signal }), []);
  const [offset, setOffset] = useState(0);
  const history = useAsync((signal) => observe('GET /api/alerts/history', { query: { limit: 25, offset }, signal }), [offset], {
    pollMs: 15_000,
  });
  const byId = new Map(rules.data?.rules.map((r) => [r.id, r]) ?? []);
  const { edit, saved, section: editSection } = useEditOrCreate<AlertRule>('alert-edit-name', rules.reload);
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
    <Page
      title="Alerts"
      subtitle="Rules measured every minute over a sliding window; a rule fires when its value goes above the threshold and resolves when it drops back."
    >
      <Section title="Rules">
        {saved && <Notice>{saved}</Notice>}
        <ManagedTable
          state={rules}
          rows={(d) => d.rules}
          empty="No alert rules yet. Create one below."
          columns={RULE_COLUMNS}
          rowKey={(r) => r.id}
          subject={(r) => r.name}
          actions={[toggle, remove]}
          buttons={(r) => [
            { label: 'Edit', run: () => edit(r), pending: false },
            rowButton(r.enabled ? 'Disable' : 'Enable', toggle, [r]),
            rowButton('Delete', remove, [r], { danger: true }),
          ]}
        />
      </Section>
      <EditOrCreateSection
        {...editSection}
        sectionId="section-edit-rule"
        newTitle="New rule"
        form={({ item, ...props }) => <RuleForm rule={item} {...props} />}
      />
      <Section title="History">
        <AsyncTable
          state={history}
          rows={(d) => d.entries}
          empty="No alert has fired yet."
          columns={historyColumns(byId)}
          rowKey={(e) => e.id}
          after={(d) => <Pager label="Alert history" offset={offset} limit={25} total={d.total} onChange={setOffset} />}
        />
      </Section>
    </Page>
  );
}
