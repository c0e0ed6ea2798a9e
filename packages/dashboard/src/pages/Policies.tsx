import { useState, type FormEvent } from 'react';
import type { GateSchemas } from '@vigil/sdk/types';
import { gate, type GateAnswer, type GateBody } from '../api.ts';
import { CreateForm, EditOrCreateSection, TableScroll, useEditOrCreate } from '../components.tsx';
import { fmtDateTime, parseJsonObject, plural } from '../format.ts';
import { Async, Badge, ErrorMessage, Field, JsonView, Notice, Page, RowAction, Section, StatusBadge, useAction, useAsync } from '../ui.tsx';

type Policy = GateSchemas.Policy;
type Rule = Policy['rules'][number];
type SimulationRequest = GateBody<'POST /api/policies/simulate'>;

/**
 * What a new policy starts from. Its routing rule escalates once, then denies: the default the
 * console offers for new policies (docs/guide/escalation.md); the API's default for a rule without
 * onDeadline is the specification's expiry, failing closed at expiresAt with its reason recorded.
 */
const EXAMPLE_RULES = `[
  {"match": {"action": {"$regex": "^delete_"}}, "decision": "auto_deny"},
  {"match": {"action": "pay", "amount": {"$lt": 100}}, "decision": "auto_approve"},
  {"match": {"action": "pay"}, "decision": "route_to_human", "requireReason": true,
   "onDeadline": {"escalate": [{"timeoutSeconds": 3600}], "remindBeforeSeconds": 600}}
]`;

function matchText(match: Record<string, unknown>): string {
  const parts = Object.entries(match).map(([path, matcher]) => {
    if (matcher === null || typeof matcher !== 'object') return `${path} = ${JSON.stringify(matcher)}`;
    return Object.entries(matcher as Record<string, unknown>)
      .map(([op, value]) => `${path} ${{ $lt: '<', $gt: '>', $lte: '≤', $gte: '≥', $in: 'in', $regex: 'matches' }[op] ?? op} ${JSON.stringify(value)}`)
      .join(' and ');
  });
  return parts.length ? parts.join(' and ') : 'every request';
}

function parseRules(text: string): Rule[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`Rules are not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(value)) throw new Error('Rules must be a JSON array of rules, e.g. [{"match": {"action": "pay"}, "decision": "route_to_human"}]');
  return value as Rule[];
}

function Simulator({ policies }: { policies: Policy[] }) {
  const [action, setAction] = useState('pay');
  const [urgency, setUrgency] = useState<NonNullable<SimulationRequest['urgency']>>('normal');
  const [params, setParams] = useState('{"amount": 250}');
  const [context, setContext] = useState('{}');
  const [useDraft, setUseDraft] = useState(false);
  const [draftId, setDraftId] = useState('');
  const [draftRules, setDraftRules] = useState(EXAMPLE_RULES);
  const [result, setResult] = useState<GateAnswer<'POST /api/policies/simulate'> | null>(null);
  const simulate = useAction(async () => {
    const body: SimulationRequest = { action, urgency, params: parseJsonObject(params, 'Parameters'), context: parseJsonObject(context, 'Context') };
    if (useDraft) {
      const replaced = policies.find((p) => p.id === draftId);
      body.candidate = {
        ...(draftId && { id: draftId }),
        name: replaced ? `${replaced.name} (draft)` : 'draft policy',
        priority: replaced?.priority ?? 100,
        rules: parseRules(draftRules),
      };
    }
    setResult(await gate('POST /api/policies/simulate', { body }));
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setResult(null);
    void simulate.run();
  };
  return (
    <form onSubmit={submit} className="stack" aria-label="Policy simulator">
      <div className="form-grid">
        <Field label="Action" htmlFor="sim-action">
          <input required value={action} onChange={(e) => setAction(e.target.value)} />
        </Field>
        <Field label="Urgency" htmlFor="sim-urgency">
          <select value={urgency} onChange={(e) => setUrgency(e.target.value as typeof urgency)}>
            {['low', 'normal', 'high', 'critical'].map((u) => (
              <option key={u}>{u}</option>
            ))}
          </select>
        </Field>
        <Field label="Parameters (JSON object)" htmlFor="sim-params">
          <textarea rows={3} className="mono" value={params} onChange={(e) => setParams(e.target.value)} />
        </Field>
        <Field label="Context (JSON object)" htmlFor="sim-context">
          <textarea rows={3} className="mono" value={context} onChange={(e) => setContext(e.target.value)} />
        </Field>
      </div>
      <label className="checkbox">
        <input type="checkbox" checked={useDraft} onChange={(e) => setUseDraft(e.target.checked)} /> Also try a draft policy (not saved)
      </label>
      {useDraft && (
        <div className="form-grid">
          <Field label="The draft stands in for" htmlFor="sim-draft-of">
            <select value={draftId} onChange={(e) => setDraftId(e.target.value)}>
              <option value="">no policy: it is added</option>
              {policies.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Draft rules (JSON array)" htmlFor="sim-draft-rules">
            <textarea rows={6} className="mono" value={draftRules} onChange={(e) => setDraftRules(e.target.value)} />
          </Field>
        </div>
      )}
      <div>
        <button type="submit" disabled={simulate.pending}>
          {simulate.pending ? 'Evaluating…' : 'Try it'}
        </button>
      </div>
      {simulate.error && <ErrorMessage error={simulate.error} title="Could not evaluate" />}
      {result && (
        <div className="simulation" role="status" data-testid="simulation">
          <p>
            This request would be <StatusBadge status={result.status} /> —{' '}
            {result.decision.policyId ? (
              <>
                rule {result.decision.ruleIndex! + 1} of “{result.decision.policyName}”{result.candidateMatched && ' (the draft)'} decides{' '}
                <code>{result.decision.decision}</code>.
              </>
            ) : (
              <>
                no rule matched, so it goes to a person (<code>route_to_human</code>).
              </>
            )}
          </p>
          {result.matchedRule && <p className="muted">Matched: {matchText(result.matchedRule.match)}</p>}
          {result.decision.requireReason && <p>A decision on it needs a reason.</p>}
          {result.decision.approvers.length > 0 && <p>Approvers: {result.decision.approvers.join(', ')}</p>}
          <p className="muted small">{result.policiesEvaluated} enabled policies evaluated. Nothing was created.</p>
        </div>
      )}
    </form>
  );
}

/** Creates a policy, or with `policy` edits that one: the form starts with its name, priority and rules, and saves them with PUT. */
function PolicyForm({ policy, onSaved, onCancel }: { policy?: Policy; onSaved: (message: string) => void; onCancel?: () => void }) {
  const [name, setName] = useState(policy?.name ?? '');
  const [priority, setPriority] = useState(String(policy?.priority ?? 100));
  const [rules, setRules] = useState(policy ? JSON.stringify(policy.rules, null, 2) : EXAMPLE_RULES);
  const save = async () => {
    const body = { name, priority: Number(priority), rules: parseRules(rules) };
    if (policy) {
      const saved = await gate('PUT /api/policies/{id}', { params: { id: policy.id }, body });
      onSaved(`Policy “${saved.name}” saved; new requests are evaluated against its ${plural(saved.rules.length, 'rule')} at once.`);
      return '';
    }
    const created = await gate('POST /api/policies', { body });
    setName('');
    onSaved('');
    return `Policy “${created.name}” saved; new requests are evaluated against it at once.`;
  };
  const id = (field: string) => `policy-${policy ? 'edit-' : ''}${field}`;
  return (
    <CreateForm
      create={save}
      submit={policy ? 'Save changes' : 'Save policy'}
      pending="Saving…"
      failure="The policy was not saved"
      cancel={onCancel}
      label={policy ? `Edit policy ${policy.name}` : 'New policy'}
    >
      <div className="form-grid">
        <Field label="Name" htmlFor={id('name')}>
          <input required value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field label="Priority (lower runs first)" htmlFor={id('priority')}>
          <input type="number" required value={priority} onChange={(e) => setPriority(e.target.value)} />
        </Field>
      </div>
      <Field
        label="Rules (JSON array, first match wins)"
        htmlFor={id('rules')}
        hint={
          <>
            Matchers: exact value, <code>$lt $gt $lte $gte</code>, <code>$in</code>, <code>$regex</code>; paths such as <code>action</code>,{' '}
            <code>params.amount</code> or just <code>amount</code>. Decisions: auto_approve, auto_deny, route_to_human, route_to_agent.
          </>
        }
      >
        <textarea
          rows={policy ? Math.min(16, Math.max(7, rules.split('\n').length)) : 7}
          className="mono"
          value={rules}
          onChange={(e) => setRules(e.target.value)}
        />
      </Field>
    </CreateForm>
  );
}

export function PoliciesPage() {
  const policies = useAsync((signal) => gate('GET /api/policies', { query: { limit: 500 }, signal }), []);
  const toggle = useAction(async (policy: Policy) => {
    await gate('PUT /api/policies/{id}', { params: { id: policy.id }, body: { enabled: !policy.enabled } });
    policies.reload();
  });
  const { edit, saved, section: editSection } = useEditOrCreate<Policy>('policy-edit-name', policies.reload);
  const remove = useAction(async (policy: Policy) => {
    if (!window.confirm(`Delete the policy “${policy.name}”?`)) return;
    await gate('DELETE /api/policies/{id}', { params: { id: policy.id } });
    policies.reload();
  });

  return (
    <Page
      title="Policies"
      subtitle="Enabled policies are evaluated by priority, rules in order; the first matching rule decides. No match sends the request to a person."
    >
      <Section title="Simulator">
        <p className="muted">Try a request against the current policies — and optionally a draft — without creating it.</p>
        <Simulator policies={policies.data?.policies ?? []} />
      </Section>
      <Section title="Policies in evaluation order">
        {saved && <Notice>{saved}</Notice>}
        {(toggle.error ?? remove.error) && <ErrorMessage error={(toggle.error ?? remove.error)!} />}
        <Async
          state={policies}
          label="Loading policies…"
          isEmpty={(d) => d.policies.length === 0}
          empty="No policies: every request goes to a person. Add one below."
        >
          {(data) => (
            <div className="stack">
              {data.policies.map((p) => (
                <article key={p.id} id={`policy-${p.id}`} className="policy" aria-labelledby={`policy-${p.id}-name`}>
                  <header className="row">
                    <h3 id={`policy-${p.id}-name`}>{p.name}</h3>
                    <Badge>priority {p.priority}</Badge>
                    {p.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>}
                    <span className="muted small">
                      <code>{p.id}</code> · updated {fmtDateTime(p.updatedAt)}
                    </span>
                    <span className="spacer" />
                    <RowAction tone="secondary" label="Edit" subject={p.name} onClick={() => edit(p)} />
                    <RowAction
                      tone="secondary"
                      label={p.enabled ? 'Disable' : 'Enable'}
                      subject={p.name}
                      onClick={() => void toggle.run(p)}
                      disabled={toggle.pending}
                    />
                    <RowAction tone="danger" label="Delete" subject={p.name} onClick={() => void remove.run(p)} disabled={remove.pending} />
                  </header>
                  <TableScroll>
                    <table>
                      <thead>
                        <tr>
                          <th scope="col" className="num">
                            #
                          </th>
                          <th scope="col">When</th>
                          <th scope="col">Decision</th>
                          <th scope="col">Approvers</th>
                          <th scope="col">Reason required</th>
                        </tr>
                      </thead>
                      <tbody>
                        {p.rules.map((r, i) => (
                          <tr key={i}>
                            <td className="num">{i + 1}</td>
                            <td>{matchText(r.match)}</td>
                            <td>
                              <code>{r.decision}</code>
                            </td>
                            <td>{r.approvers?.join(', ') || '—'}</td>
                            <td>{r.requireReason ? 'yes' : 'no'}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </TableScroll>
                  {p.rules.length === 0 && <p className="empty">No rules.</p>}
                </article>
              ))}
            </div>
          )}
        </Async>
      </Section>
      <EditOrCreateSection
        {...editSection}
        sectionId="section-edit-policy"
        newTitle="New policy"
        form={({ item, ...props }) => <PolicyForm policy={item} {...props} />}
      />
      <details className="card">
        <summary>Raw JSON of the policies</summary>
        <JsonView value={policies.data?.policies} />
      </details>
    </Page>
  );
}
