import type { ObserveSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { observe } from '../api.ts';
import {
  AsyncTable,
  type Column,
  CreateForm,
  EditOrCreateSection,
  useEditOrCreate,
  ManagedTable,
  rowButton,
  TextField,
  usePolicyNames,
} from '../components.tsx';
import { fmtDateTime, fmtNumber, fmtPolicy, fmtScore, fmtUsd, fmtWindow, minutesToMs, msToMinutes, timeAgo, type PolicyNames } from '../format.ts';
import { Link } from '../router.tsx';
import { Badge, Field, Notice, Page, Pager, Section, useAction, useAsync } from '../ui.tsx';

type GuardrailRule = ObserveSchemas.GuardrailRule;
type ConditionType = GuardrailRule['conditionType'];
type ActionType = GuardrailRule['actionType'];
type Trigger = ObserveSchemas.GuardrailTrigger;

/** A guardrail's window, stored in ms, in the minutes the alert rules use too: "5 minutes", "1 day". */
const period = (ms: unknown): string => fmtWindow(msToMinutes(Number(ms)));

function describeCondition(type: string, c: Record<string, unknown>): string {
  switch (type) {
    case 'error_rate_threshold':
      return `error rate above ${fmtNumber(Number(c.threshold), 2)}% over ${period(c.windowMs)}`;
    case 'cost_limit':
      return `spend above ${fmtUsd(Number(c.maxCostUsd))} over ${period(c.periodMs)}`;
    case 'health_score_threshold':
      return `${c.dimension ? `${String(c.dimension)} score` : 'health score'} below ${fmtScore(Number(c.minScore))}`;
    case 'custom_metric':
      return `${String(c.metricKey)} ${String(c.operator)} ${String(c.value)}`;
    default:
      return type;
  }
}

function describeAction(type: string, c: Record<string, unknown>, policies?: PolicyNames): string {
  switch (type) {
    case 'pause_agent':
      return `pause the agent${c.reason ? ` (“${String(c.reason)}”)` : ''}`;
    case 'notify_webhook':
      return `notify ${String(c.url)}`;
    case 'downgrade_model':
      return `switch the model to ${String(c.targetModel)}`;
    case 'approval_policy':
      return `require approval ${fmtPolicy(String(c.policyId), policies)}`;
    default:
      return type;
  }
}

/** A condition's form field; `inMinutes`: stored in ms, asked for in minutes like every other window. */
type ConditionField = { name: string; label: string; type: 'number' | 'text' | 'select'; options?: string[]; initial: string; inMinutes?: boolean };

const CONDITION_FIELDS: Record<ConditionType, ConditionField[]> = {
  error_rate_threshold: [
    { name: 'threshold', label: 'Error rate above (%)', type: 'number', initial: '20' },
    { name: 'windowMs', label: 'Window (minutes)', type: 'number', initial: '5', inMinutes: true },
  ],
  cost_limit: [
    { name: 'maxCostUsd', label: 'Spend above (USD)', type: 'number', initial: '10' },
    { name: 'periodMs', label: 'Period (minutes)', type: 'number', initial: '1440', inMinutes: true },
  ],
  health_score_threshold: [
    { name: 'minScore', label: 'Score below', type: 'number', initial: '60' },
    {
      name: 'dimension',
      label: 'Dimension',
      type: 'select',
      options: ['', 'error_rate', 'cost_efficiency', 'tool_success', 'latency', 'completion_rate'],
      initial: '',
    },
  ],
  custom_metric: [
    { name: 'metricKey', label: 'Metric key (dot path)', type: 'text', initial: 'quality.score' },
    { name: 'operator', label: 'Operator', type: 'select', options: ['gt', 'gte', 'lt', 'lte', 'eq'], initial: 'lt' },
    { name: 'value', label: 'Value', type: 'number', initial: '0.5' },
  ],
};

const ACTION_FIELDS: Record<ActionType, { name: string; label: string; initial: string; optional?: boolean }[]> = {
  pause_agent: [{ name: 'reason', label: 'Reason (optional)', initial: '', optional: true }],
  notify_webhook: [{ name: 'url', label: 'Webhook URL', initial: 'https://' }],
  downgrade_model: [{ name: 'targetModel', label: 'Target model', initial: 'gpt-4o-mini' }],
  approval_policy: [{ name: 'policyId', label: 'Gate policy id', initial: '' }],
};

/** A rule's configs as the form's text values: `c.threshold`, `a.url` … */
function formValues(rule: GuardrailRule): Record<string, string> {
  const values: Record<string, string> = {};
  const inMinutes = new Set(CONDITION_FIELDS[rule.conditionType].filter((f) => f.inMinutes).map((f) => f.name));
  for (const [key, v] of Object.entries(rule.conditionConfig))
    values[`c.${key}`] = v === null || v === undefined ? '' : String(inMinutes.has(key) ? msToMinutes(Number(v)) : v);
  for (const [key, v] of Object.entries(rule.actionConfig)) values[`a.${key}`] = v === null || v === undefined ? '' : String(v);
  return values;
}

/** Creates a guardrail, or with `rule` edits that one: the form starts with its values and saves them with PUT. */
function GuardrailForm({ rule, onSaved, onCancel }: { rule?: GuardrailRule; onSaved: (message: string) => void; onCancel?: () => void }) {
  const [name, setName] = useState(rule?.name ?? '');
  const [agentId, setAgentId] = useState(rule?.agentId ?? '');
  const [conditionType, setConditionType] = useState<ConditionType>(rule?.conditionType ?? 'error_rate_threshold');
  const [actionType, setActionType] = useState<ActionType>(rule?.actionType ?? 'pause_agent');
  const [values, setValues] = useState<Record<string, string>>(rule ? formValues(rule) : {});
  const [cooldown, setCooldown] = useState(String(rule?.cooldownMinutes ?? 15));
  const [dryRun, setDryRun] = useState(rule?.dryRun ?? true);
  const value = (key: string, initial: string) => values[key] ?? initial;
  const save = async () => {
    const conditionConfig: Record<string, unknown> = {};
    for (const f of CONDITION_FIELDS[conditionType]) {
      const v = value(`c.${f.name}`, f.initial);
      if (v === '') continue;
      conditionConfig[f.name] = f.type === 'number' ? (f.inMinutes ? minutesToMs(Number(v)) : Number(v)) : v;
    }
    const actionConfig: Record<string, unknown> = {};
    for (const f of ACTION_FIELDS[actionType]) {
      const v = value(`a.${f.name}`, f.initial).trim();
      if (v !== '' || !f.optional) actionConfig[f.name] = v;
    }
    const definition = { name, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes: Number(cooldown), dryRun };
    if (rule) {
      const saved = await observe('PUT /api/guardrails/{id}', { params: { id: rule.id }, body: { ...definition, agentId: agentId.trim() || null } });
      onSaved(
        `Guardrail “${saved.name}” saved: when ${describeCondition(saved.conditionType, saved.conditionConfig)}, ${describeAction(saved.actionType, saved.actionConfig)}.`,
      );
      return '';
    }
    const created = await observe('POST /api/guardrails', { body: { ...definition, ...(agentId.trim() && { agentId: agentId.trim() }) } });
    setName('');
    onSaved('');
    return `Guardrail “${created.name}” created${created.dryRun ? ' in dry-run mode: it records triggers without acting' : ''}.`;
  };
  const id = (field: string) => `gr-${rule ? 'edit-' : ''}${field}`;
  return (
    <CreateForm
      create={save}
      submit={rule ? 'Save guardrail' : 'Create guardrail'}
      pending={rule ? 'Saving…' : 'Creating…'}
      failure={rule ? 'The guardrail was not saved' : 'The guardrail was not created'}
      cancel={onCancel}
      label={rule ? `Edit guardrail ${rule.name}` : 'New guardrail'}
    >
      <div className="form-grid">
        <TextField id={id('name')} label="Name" required value={name} onChange={setName} />
        <TextField id={id('agent')} label="Agent (empty: every agent)" value={agentId} onChange={setAgentId} />
        <Field label="When" htmlFor={id('condition')}>
          <select value={conditionType} onChange={(e) => setConditionType(e.target.value as ConditionType)}>
            <option value="error_rate_threshold">Error rate above a threshold</option>
            <option value="cost_limit">Spend above a limit</option>
            <option value="health_score_threshold">Health score below a minimum</option>
            <option value="custom_metric">A custom metric crosses a value</option>
          </select>
        </Field>
        {CONDITION_FIELDS[conditionType].map((f) => (
          <Field key={f.name} label={f.label} htmlFor={id(`c-${f.name}`)}>
            {f.type === 'select' ? (
              <select
                id={id(`c-${f.name}`)}
                value={value(`c.${f.name}`, f.initial)}
                onChange={(e) => setValues((v) => ({ ...v, [`c.${f.name}`]: e.target.value }))}
              >
                {f.options!.map((o) => (
                  <option key={o} value={o}>
                    {o || 'overall'}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={id(`c-${f.name}`)}
                type={f.type}
                step="any"
                value={value(`c.${f.name}`, f.initial)}
                onChange={(e) => setValues((v) => ({ ...v, [`c.${f.name}`]: e.target.value }))}
              />
            )}
          </Field>
        ))}
        <Field label="Then" htmlFor={id('action')}>
          <select value={actionType} onChange={(e) => setActionType(e.target.value as ActionType)}>
            <option value="pause_agent">Pause the agent</option>
            <option value="notify_webhook">Call a webhook</option>
            <option value="downgrade_model">Switch to a cheaper model</option>
            <option value="approval_policy">Require an approval policy</option>
          </select>
        </Field>
        {ACTION_FIELDS[actionType].map((f) => (
          <Field key={f.name} label={f.label} htmlFor={id(`a-${f.name}`)}>
            <input
              id={id(`a-${f.name}`)}
              value={value(`a.${f.name}`, f.initial)}
              onChange={(e) => setValues((v) => ({ ...v, [`a.${f.name}`]: e.target.value }))}
            />
          </Field>
        ))}
        <Field label="Cooldown (minutes between actions)" htmlFor={id('cooldown')}>
          <input type="number" min={0} required value={cooldown} onChange={(e) => setCooldown(e.target.value)} />
        </Field>
      </div>
      <label className="checkbox">
        <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> Dry run: record triggers but take no action
      </label>
    </CreateForm>
  );
}

const ruleColumns = (policies: PolicyNames): Column<GuardrailRule>[] => [
  { header: 'Name', cell: (r) => r.name },
  {
    header: 'Agent',
    cell: (r) => (r.agentId ? <Link to={`/agents/${encodeURIComponent(r.agentId)}`}>{r.agentId}</Link> : <span className="muted">every agent</span>),
  },
  { header: 'When', cell: (r) => describeCondition(r.conditionType, r.conditionConfig) },
  {
    header: 'Then',
    cell: (r) => (
      <>
        {describeAction(r.actionType, r.actionConfig, policies)}
        <div className="muted small">cooldown {fmtWindow(r.cooldownMinutes)}</div>
      </>
    ),
  },
  {
    header: 'Triggers',
    num: true,
    cell: (r) => (
      <>
        {fmtNumber(r.triggerCount)}
        {r.lastTriggeredAt && <div className="muted small">last {timeAgo(r.lastTriggeredAt)}</div>}
      </>
    ),
  },
  { header: 'Mode', cell: (r) => (!r.enabled ? <Badge>disabled</Badge> : r.dryRun ? <Badge tone="info">dry run</Badge> : <Badge tone="good">active</Badge>) },
];

/** A trigger's measured value or threshold: money for a spend limit, else a number. */
const triggerValue = (t: Trigger, value: number): string => (t.conditionType === 'cost_limit' ? fmtUsd(value) : fmtNumber(value, 4));

const OUTCOME_TONES = { applied: 'good', dry_run: 'info', queued: 'warn' } as const;

const TRIGGER_COLUMNS: Column<Trigger>[] = [
  { header: 'When', title: (t) => fmtDateTime(t.triggeredAt), cell: (t) => timeAgo(t.triggeredAt) },
  { header: 'Rule', cell: (t) => t.ruleName },
  { header: 'Agent', cell: (t) => <Link to={`/agents/${encodeURIComponent(t.agentId)}`}>{t.agentId}</Link> },
  { header: 'Value', num: true, cell: (t) => triggerValue(t, t.currentValue) },
  { header: 'Threshold', num: true, cell: (t) => triggerValue(t, t.threshold) },
  { header: 'Action', cell: (t) => t.actionType },
  {
    header: 'Outcome',
    cell: (t) => (
      <>
        <Badge tone={OUTCOME_TONES[t.actionResult.status]}>{t.actionResult.status.replace('_', ' ')}</Badge>{' '}
        <span className="muted small">{t.actionResult.detail}</span>
      </>
    ),
  },
];

export function GuardrailsPage() {
  const rules = useAsync((signal) => observe('GET /api/guardrails', { signal }), [], { pollMs: 15_000 });
  const policies = usePolicyNames();
  const [offset, setOffset] = useState(0);
  const history = useAsync((signal) => observe('GET /api/guardrails/history', { query: { limit: 25, offset }, signal }), [offset], {
    pollMs: 15_000,
  });
  const update = useAction(async (rule: GuardrailRule, change: Partial<Pick<GuardrailRule, 'enabled' | 'dryRun'>>) => {
    await observe('PUT /api/guardrails/{id}', { params: { id: rule.id }, body: change });
    rules.reload();
  });
  const { edit, saved, section: editSection } = useEditOrCreate<GuardrailRule>('gr-edit-name', rules.reload);
  const remove = useAction(async (rule: GuardrailRule) => {
    if (!window.confirm(`Delete the guardrail “${rule.name}”? Its triggers are kept.`)) return;
    await observe('DELETE /api/guardrails/{id}', { params: { id: rule.id } });
    rules.reload();
  });

  return (
    <Page title="Guardrails" subtitle="Rules that watch each agent after every batch of events (and every 30 s) and act when a condition is breached.">
      <Section title="Rules">
        {saved && <Notice>{saved}</Notice>}
        <ManagedTable
          state={rules}
          rows={(d) => d.rules}
          empty="No guardrails yet. Create one below; start in dry-run mode to see what it would do."
          columns={ruleColumns(policies)}
          rowKey={(r) => r.id}
          subject={(r) => r.name}
          actions={[update, remove]}
          buttons={(r) => [
            { label: 'Edit', run: () => edit(r), pending: false },
            rowButton(r.enabled ? 'Disable' : 'Enable', update, [r, { enabled: !r.enabled }]),
            rowButton(r.dryRun ? 'Arm' : 'Dry run', update, [r, { dryRun: !r.dryRun }]),
            rowButton('Delete', remove, [r], { danger: true }),
          ]}
        />
      </Section>
      <EditOrCreateSection
        {...editSection}
        sectionId="section-edit-guardrail"
        newTitle="New guardrail"
        form={({ item, ...props }) => <GuardrailForm rule={item} {...props} />}
      />
      <Section title="Triggers">
        <AsyncTable
          state={history}
          rows={(d) => d.triggers}
          empty="No guardrail has triggered yet."
          columns={TRIGGER_COLUMNS}
          rowKey={(t) => t.id}
          after={(d) => <Pager label="Guardrail triggers" offset={offset} limit={25} total={d.total} onChange={setOffset} />}
        />
      </Section>
    </Page>
  );
}
