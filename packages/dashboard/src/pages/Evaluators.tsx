import type { ObserveSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { observe, type ObserveBody } from '../api.ts';
import { CreateForm, ManagedTable, rowButton, TextField, type Column } from '../components.tsx';
import { fmtDateTime, fmtScore, plural, rulesWithIds, timeAgo } from '../format.ts';
import { Field, Page, Section, useAction, useAsync } from '../ui.tsx';

type Evaluator = ObserveSchemas.Evaluator;
type EvaluatorBody = ObserveBody<'POST /api/evaluators'>;
type Kind = Evaluator['kind'];

const KINDS: Record<Kind, string> = { compliance: 'Rules (deterministic)', llm_judge: 'AI judge (rubric)' };
const RULES_EXAMPLE = '{"type": "tool_denylist", "tools": ["shell_*"]}';

function NewEvaluator({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<Kind>('compliance');
  const [rules, setRules] = useState('');
  const [rubric, setRubric] = useState('');
  const [model, setModel] = useState('');
  const [passThreshold, setPassThreshold] = useState('');
  const create = async () => {
    const definition: Partial<EvaluatorBody> =
      kind === 'compliance'
        ? // The server checks each rule against its schema and names what is wrong.
          { rules: rulesWithIds(rules) as EvaluatorBody['rules'] }
        : { rubric, ...(model.trim() && { model: model.trim() }) };
    const evaluator = await observe('POST /api/evaluators', {
      body: { name, kind, ...definition, ...(passThreshold.trim() && { passThreshold: Number(passThreshold) }) },
    });
    setName('');
    onCreated();
    return `Evaluator “${evaluator.name}” saved: choose it when running a dataset or on a session’s page.`;
  };
  return (
    <CreateForm create={create} submit="Save evaluator" pending="Saving…" failure="The evaluator was not saved">
      <div className="form-grid">
        <TextField id="evaluator-name" label="Name" required maxLength={200} value={name} onChange={setName} />
        <Field label="Kind" htmlFor="evaluator-kind">
          <select value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            {Object.entries(KINDS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Pass threshold (optional)" htmlFor="evaluator-threshold" hint="A score from 0 to 1; a session passes at or above it.">
          <input type="number" min={0} max={1} step="0.01" value={passThreshold} onChange={(e) => setPassThreshold(e.target.value)} />
        </Field>
        {kind === 'llm_judge' && <TextField id="evaluator-model" label="Judge model (optional)" value={model} onChange={setModel} />}
      </div>
      {kind === 'compliance' ? (
        <Field
          label="Rules, one JSON object a line"
          htmlFor="evaluator-rules"
          hint={
            <>
              Each rule has an <code>id</code> that its violations name: give one (<code>"id": "no-shell"</code>) or leave it out for <code>rule-1</code>,{' '}
              <code>rule-2</code>… by line. Types: <code>tool_denylist</code> and <code>tool_allowlist</code> (<code>tools</code>, a <code>*</code> at either
              end), <code>max_cost</code> (<code>maxUsd</code>), <code>no_severity_above</code> (<code>severity</code>).
            </>
          }
        >
          <textarea rows={4} className="mono" required value={rules} placeholder={RULES_EXAMPLE} onChange={(e) => setRules(e.target.value)} />
        </Field>
      ) : (
        <Field label="Rubric" htmlFor="evaluator-rubric" hint="What the judge scores the session’s transcript against.">
          <textarea rows={4} required value={rubric} onChange={(e) => setRubric(e.target.value)} />
        </Field>
      )}
    </CreateForm>
  );
}

function definition(e: Evaluator): string {
  if (e.kind === 'llm_judge') return `${e.model ? `${e.model}: ` : ''}${e.rubric ?? ''}`;
  const rules = e.rules ?? [];
  return `${plural(rules.length, 'rule')}: ${rules.map((r) => `${String(r.id)} (${String(r.type)})`).join(', ')}`;
}

const COLUMNS: Column<Evaluator>[] = [
  { header: 'Name', rowHeader: true, cell: (e) => e.name },
  { header: 'Kind', cell: (e) => KINDS[e.kind] },
  { header: 'Definition', className: 'clip', title: definition, cell: definition },
  {
    header: 'Pass threshold',
    num: true,
    cell: (e) => (e.passThreshold !== null ? fmtScore(e.passThreshold) : <span className="muted">{e.kind === 'compliance' ? 'no violation' : 'default'}</span>),
  },
  { header: 'Created', title: (e) => fmtDateTime(e.createdAt), cell: (e) => timeAgo(e.createdAt) },
];

export function EvaluatorsPage() {
  const list = useAsync((signal) => observe('GET /api/evaluators', { signal }), []);
  const remove = useAction(async (evaluator: Evaluator) => {
    if (!window.confirm(`Delete the evaluator “${evaluator.name}”? Runs already started keep their copy of it.`)) return;
    await observe('DELETE /api/evaluators/{id}', { params: { id: evaluator.id } });
    list.reload();
  });
  return (
    <Page
      title="Evaluators"
      subtitle="Saved ways to score a session: deterministic rules, or an AI judge with a rubric. Each verdict is chained into the session it scores."
    >
      <Section title="Evaluators">
        <ManagedTable
          state={list}
          rows={(d) => d.evaluators}
          empty="No evaluators yet. Save one below."
          columns={COLUMNS}
          rowKey={(e) => e.id}
          testId="evaluators"
          subject={(e) => e.name}
          actions={[remove]}
          buttons={(e) => [rowButton('Delete', remove, [e], { danger: true })]}
        />
      </Section>
      <Section title="New evaluator">
        <NewEvaluator onCreated={list.reload} />
      </Section>
    </Page>
  );
}
