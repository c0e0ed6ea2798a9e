import { useState, type FormEvent } from 'react';
import { observe } from '../api.ts';
import { Async, Badge, ErrorMessage, Field, fmtDateTime, fmtNumber, Notice, Page, Pager, RowAction, Section, timeAgo, useAction, useAsync } from '../ui.tsx';

interface AlertRule {
  id: string;
  name: string;
  enabled: boolean;
  condition: string;
  threshold: number;
  windowMinutes: number;
  scope: { agentId?: string; tags?: string[] };
  notifyChannels: string[];
  createdAt: string;
}

interface HistoryEntry {
  id: string;
  ruleId: string;
  triggeredAt: string;
  resolvedAt?: string;
  currentValue: number;
  threshold: number;
  notified: boolean;
}

const CONDITIONS: Record<string, { label: string; unit: string }> = {
  error_rate_exceeds: { label: 'Error rate exceeds', unit: 'ratio 0–1 (0.1 = 10%)' },
  cost_exceeds: { label: 'Spend exceeds', unit: 'USD in the window' },
  latency_exceeds: { label: 'Tool latency exceeds', unit: 'milliseconds (mean)' },
  event_count_exceeds: { label: 'Event count exceeds', unit: 'events in the window' },
  no_events_for: { label: 'No events for', unit: 'minutes' },
};

function describe(rule: Pick<AlertRule, 'condition' | 'threshold' | 'windowMinutes'>): string {
  const c = CONDITIONS[rule.condition];
  if (rule.condition === 'no_events_for') return `No events for ${rule.threshold} minutes`;
  return `${c?.label ?? rule.condition} ${rule.threshold} (${c?.unit ?? ''}) over ${rule.windowMinutes} min`;
}

function NewRule({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [condition, setCondition] = useState('error_rate_exceeds');
  const [threshold, setThreshold] = useState('0.1');
  const [windowMinutes, setWindowMinutes] = useState('15');
  const [agentId, setAgentId] = useState('');
  const [channel, setChannel] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const create = useAction(async () => {
    const rule = await observe<AlertRule>('/alerts/rules', {
      method: 'POST',
      body: {
        name,
        condition,
        threshold: Number(threshold),
        windowMinutes: Number(windowMinutes),
        ...(agentId.trim() && { scope: { agentId: agentId.trim() } }),
        ...(channel.trim() && { notifyChannels: [channel.trim()] }),
      },
    });
    setDone(`Rule “${rule.name}” created; it is evaluated every minute.`);
    setName('');
    onCreated();
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    void create.run();
  };
  return (
    <form onSubmit={submit} className="form-grid">
      <Field label="Name" htmlFor="alert-name">
        <input id="alert-name" required value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
      </Field>
      <Field label="Condition" htmlFor="alert-condition">
        <select id="alert-condition" value={condition} onChange={(e) => setCondition(e.target.value)}>
          {Object.entries(CONDITIONS).map(([value, c]) => (
            <option key={value} value={value}>
              {c.label}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Threshold" htmlFor="alert-threshold" hint={CONDITIONS[condition]?.unit}>
        <input id="alert-threshold" type="number" step="any" min={0} required value={threshold} onChange={(e) => setThreshold(e.target.value)} aria-describedby="alert-threshold-hint" />
      </Field>
      <Field label="Window (minutes)" htmlFor="alert-window">
        <input id="alert-window" type="number" min={1} max={43200} required value={windowMinutes} onChange={(e) => setWindowMinutes(e.target.value)} />
      </Field>
      <Field label="Only this agent (optional)" htmlFor="alert-agent">
        <input id="alert-agent" value={agentId} onChange={(e) => setAgentId(e.target.value)} />
      </Field>
      <Field label="Notify URL (optional)" htmlFor="alert-channel">
        <input id="alert-channel" type="url" value={channel} placeholder="https://hooks.example.com/vigil" onChange={(e) => setChannel(e.target.value)} />
      </Field>
      <div className="form-actions">
        <button type="submit" disabled={create.pending}>
          {create.pending ? 'Creating…' : 'Create rule'}
        </button>
      </div>
      {create.error && <ErrorMessage error={create.error} title="The rule was not created" />}
      {done && <Notice>{done}</Notice>}
    </form>
  );
}

export function AlertsPage() {
  const rules = useAsync((signal) => observe<{ rules: AlertRule[] }>('/alerts/rules', { signal }), []);
  const [offset, setOffset] = useState(0);
  const history = useAsync((signal) => observe<{ entries: HistoryEntry[]; total: number }>('/alerts/history', { query: { limit: 25, offset }, signal }), [offset], {
    pollMs: 15_000,
  });
  const names = new Map(rules.data?.rules.map((r) => [r.id, r.name]) ?? []);
  const toggle = useAction(async (rule: AlertRule) => {
    await observe(`/alerts/rules/${rule.id}`, { method: 'PUT', body: { enabled: !rule.enabled } });
    rules.reload();
  });
  const remove = useAction(async (rule: AlertRule) => {
    if (!window.confirm(`Delete the alert rule “${rule.name}”? Its history is kept.`)) return;
    await observe(`/alerts/rules/${rule.id}`, { method: 'DELETE' });
    rules.reload();
    history.reload();
  });

  return (
    <Page title="Alerts" subtitle="Rules measured every minute over a sliding window; a rule fires when its value goes above the threshold and resolves when it drops back.">
      <Section title="Rules">
        {(toggle.error ?? remove.error) && <ErrorMessage error={(toggle.error ?? remove.error)!} />}
        <Async state={rules} isEmpty={(d) => d.rules.length === 0} empty="No alert rules yet. Create one below.">
          {(data) => (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Condition</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Notifies</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.rules.map((r) => (
                  <tr key={r.id}>
                    <td>{r.name}</td>
                    <td>{describe(r)}</td>
                    <td>{r.scope.agentId ? `agent ${r.scope.agentId}` : 'all agents'}{r.scope.tags?.length ? ` · tags ${r.scope.tags.join(', ')}` : ''}</td>
                    <td className="clip">{r.notifyChannels.length ? r.notifyChannels.join(', ') : <span className="muted">no channel</span>}</td>
                    <td>{r.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>}</td>
                    <td className="actions">
                      <RowAction tone="secondary" label={r.enabled ? 'Disable' : 'Enable'} subject={r.name} onClick={() => void toggle.run(r)} disabled={toggle.pending} />
                      <RowAction tone="danger" label="Delete" subject={r.name} onClick={() => void remove.run(r)} disabled={remove.pending} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Async>
      </Section>
      <Section title="New rule">
        <NewRule onCreated={rules.reload} />
      </Section>
      <Section title="History">
        <Async state={history} isEmpty={(d) => d.entries.length === 0} empty="No alert has fired yet.">
          {(data) => (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Rule</th>
                    <th scope="col">Fired</th>
                    <th scope="col">Resolved</th>
                    <th scope="col" className="num">Value</th>
                    <th scope="col" className="num">Threshold</th>
                    <th scope="col">Notified</th>
                  </tr>
                </thead>
                <tbody>
                  {data.entries.map((e) => (
                    <tr key={e.id}>
                      <td>{names.get(e.ruleId) ?? <span className="muted">deleted rule</span>}</td>
                      <td title={fmtDateTime(e.triggeredAt)}>{timeAgo(e.triggeredAt)}</td>
                      <td>{e.resolvedAt ? fmtDateTime(e.resolvedAt) : <Badge tone="bad">open</Badge>}</td>
                      <td className="num">{fmtNumber(e.currentValue, 4)}</td>
                      <td className="num">{fmtNumber(e.threshold, 4)}</td>
                      <td>{e.notified ? 'yes' : 'no'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager label="Alert history" offset={offset} limit={25} total={data.total} onChange={setOffset} />
            </>
          )}
        </Async>
      </Section>
    </Page>
  );
}
