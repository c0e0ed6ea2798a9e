import type { GateSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { gate } from '../api.ts';
import { AsyncTable, CreateForm, ManagedTable, rowButton, type Column } from '../components.tsx';
import { fmtDateTime, fmtUsd, timeAgo } from '../format.ts';
import { Badge, Field, Page, Section, useAction, useAsync, type Tone } from '../ui.tsx';

type Budget = GateSchemas.Budget;
type Detail = GateSchemas.BudgetDetail;
type Figure = Detail['figures'][number];
type Breach = Detail['breaches'][number];

export const LEVEL_TONES: Record<Figure['level'], Tone> = { ok: 'good', soft: 'warn', hard: 'bad' };

function scopeText(b: Budget): string {
  if (b.scope === 'tenant') return 'the whole tenant';
  return b.scopeValue === null ? `each ${b.scope}` : `${b.scope} ${b.scopeValue}`;
}

const BUDGET_COLUMNS: Column<Budget>[] = [
  { header: 'Name', cell: (b) => <code>{b.name}</code> },
  { header: 'Scope', cell: scopeText },
  { header: 'Window', cell: (b) => (b.window === 'session' ? 'each session' : `per ${b.window}`) },
  { header: 'Soft', num: true, cell: (b) => fmtUsd(b.softUsd) },
  { header: 'Hard', num: true, cell: (b) => fmtUsd(b.hardUsd) },
  { header: 'On hard', cell: (b) => (b.pauseOnHard ? 'deny and pause' : 'deny') },
  { header: 'State', cell: (b) => (b.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>) },
];

const FIGURE_COLUMNS: Column<Figure>[] = [
  { header: 'Spent by', cell: (f) => (f.key === '*' ? 'tenant' : f.key) },
  { header: 'Spend', num: true, cell: (f) => fmtUsd(f.spendUsd) },
  { header: 'Level', cell: (f) => <Badge tone={LEVEL_TONES[f.level]}>{f.level}</Badge> },
  { header: 'Agents', className: 'clip', cell: (f) => f.agentIds.join(', ') },
  { header: 'Read', title: (f) => fmtDateTime(f.updatedAt), cell: (f) => timeAgo(f.updatedAt) },
];

const BREACH_COLUMNS: Column<Breach>[] = [
  { header: 'When', title: (b) => fmtDateTime(b.at), cell: (b) => timeAgo(b.at) },
  { header: 'Level', cell: (b) => <Badge tone={LEVEL_TONES[b.level]}>{b.level}</Badge> },
  { header: 'Spent by', cell: (b) => (b.key === '*' ? 'tenant' : b.key) },
  { header: 'Spend', num: true, cell: (b) => fmtUsd(b.spendUsd) },
  { header: 'Window from', cell: (b) => fmtDateTime(b.windowStart) },
];

function BudgetDetail({ budget }: { budget: Budget }) {
  const detail = useAsync((signal) => gate('GET /api/budgets/{id}', { params: { id: budget.id }, signal }), [budget.id], { pollMs: 2000 });
  return (
    <>
      <Section title={`Spend of ${budget.name} this window`}>
        <div data-testid="budget-figures">
          <AsyncTable state={detail} rows={(d) => d.figures} empty="Nothing spent in this window yet." columns={FIGURE_COLUMNS} rowKey={(f) => f.key} />
        </div>
      </Section>
      <Section title={`Breaches of ${budget.name}`}>
        <div data-testid="budget-breaches">
          <AsyncTable
            state={detail}
            rows={(d) => d.breaches}
            empty="No threshold crossed yet."
            columns={BREACH_COLUMNS}
            rowKey={(b) => `${b.windowStart}-${b.key}-${b.level}`}
          />
        </div>
      </Section>
    </>
  );
}

/**
 * Budgets the gate enforces (docs/guide/budgets.md): over the soft threshold requests go to a
 * person, over the hard one they are denied and the agents paused in observe.
 */
export function BudgetsPage() {
  const budgets = useAsync((signal) => gate('GET /api/budgets', { signal }), []);
  const [selected, setSelected] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [scope, setScope] = useState<Budget['scope']>('agent');
  const [scopeValue, setScopeValue] = useState('');
  const [windowKind, setWindowKind] = useState<Budget['window']>('day');
  const [soft, setSoft] = useState('');
  const [hard, setHard] = useState('');
  const [pause, setPause] = useState(true);
  const create = async () => {
    const budget = await gate('POST /api/budgets', {
      body: {
        name,
        scope,
        scopeValue: scopeValue === '' ? null : scopeValue,
        window: windowKind,
        softUsd: soft === '' ? null : Number(soft),
        hardUsd: hard === '' ? null : Number(hard),
        pauseOnHard: pause,
      },
    });
    setName('');
    setScopeValue('');
    setSoft('');
    setHard('');
    budgets.reload();
    return `Budget ${budget.name} created.`;
  };
  const toggle = useAction(async (budget: Budget) => {
    await gate('PUT /api/budgets/{id}', { params: { id: budget.id }, body: { enabled: !budget.enabled } });
    budgets.reload();
  });
  const remove = useAction(async (budget: Budget) => {
    if (!window.confirm(`Delete the budget ${budget.name}? Requests it covers are no longer held to it.`)) return;
    await gate('DELETE /api/budgets/{id}', { params: { id: budget.id } });
    if (selected === budget.id) setSelected(null);
    budgets.reload();
  });
  const chosen = budgets.data?.budgets.find((b) => b.id === selected);

  return (
    <Page
      title="Budgets"
      subtitle="Spend limits the gate enforces, read from observe's live cost: over the soft threshold requests go to a person, over the hard one they are denied and the agent is paused."
    >
      <Section title="Budgets">
        <ManagedTable
          state={budgets}
          rows={(d) => d.budgets}
          empty="No budget yet."
          columns={BUDGET_COLUMNS}
          rowKey={(b) => b.id}
          rowClassName={(b) => (b.id === selected ? 'highlight' : undefined)}
          subject={(b) => b.name}
          actions={[toggle, remove]}
          buttons={(b) => [
            { label: 'Spend', run: () => setSelected(b.id === selected ? null : b.id), pending: false, pressed: b.id === selected },
            rowButton(b.enabled ? 'Disable' : 'Enable', toggle, [b]),
            rowButton('Delete', remove, [b], { danger: true }),
          ]}
        />
      </Section>
      {chosen && <BudgetDetail budget={chosen} />}
      <Section title="New budget">
        <CreateForm create={create} submit="Create budget" pending="Creating…" failure="The budget was not created">
          <div className="form-grid">
            <Field label="Name (used in policies: budgets.<name>.spendUsd)" htmlFor="budget-name">
              <input required value={name} pattern="[A-Za-z0-9_\-]+" onChange={(e) => setName(e.target.value)} />
            </Field>
            <Field label="Scope" htmlFor="budget-scope">
              <select value={scope} onChange={(e) => setScope(e.target.value as Budget['scope'])}>
                <option value="agent">agent</option>
                <option value="session">session</option>
                <option value="tag">tag</option>
                <option value="tenant">tenant</option>
              </select>
            </Field>
            <Field label="Agent, session or tag (empty: each one)" htmlFor="budget-value">
              <input value={scopeValue} disabled={scope === 'tenant'} onChange={(e) => setScopeValue(e.target.value)} />
            </Field>
            <Field label="Window" htmlFor="budget-window">
              <select value={windowKind} onChange={(e) => setWindowKind(e.target.value as Budget['window'])}>
                <option value="hour">hour</option>
                <option value="day">day</option>
                <option value="month">calendar month</option>
                <option value="session">each session</option>
              </select>
            </Field>
            <Field label="Soft threshold, USD (route to a person)" htmlFor="budget-soft">
              <input type="number" min={0} step="0.01" value={soft} onChange={(e) => setSoft(e.target.value)} />
            </Field>
            <Field label="Hard threshold, USD (deny)" htmlFor="budget-hard">
              <input type="number" min={0} step="0.01" value={hard} onChange={(e) => setHard(e.target.value)} />
            </Field>
          </div>
          <label className="row">
            <input type="checkbox" checked={pause} onChange={(e) => setPause(e.target.checked)} /> Pause the agent at the hard threshold
          </label>
        </CreateForm>
      </Section>
    </Page>
  );
}
