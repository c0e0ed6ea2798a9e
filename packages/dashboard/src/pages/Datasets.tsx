import type { ObserveSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { observe, type ObserveAnswer, type ObserveBody } from '../api.ts';
import { AsyncTable, CreateForm, Table, TextField, type Column } from '../components.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtPercent, fmtScore, parseJsonLines, plural, timeAgo } from '../format.ts';
import { Link, navigate } from '../router.tsx';
import { Async, Badge, Field, JsonView, Page, Section, Stat, Stats, StatusBadge, useAsync } from '../ui.tsx';

type DatasetSummary = ObserveAnswer<'GET /api/datasets'>['datasets'][number];
type DatasetCase = ObserveSchemas.Dataset['cases'][number];
type EvalRun = ObserveSchemas.EvalRun;
type EvalRunSummary = ObserveSchemas.EvalRunSummary;
type RunCase = EvalRun['cases'][number];
type DatasetCaseBody = ObserveBody<'POST /api/datasets'>['cases'][number];

const CASES_EXAMPLE = '{"input": {"question": "What is the refund window?"}, "expected": "30 days"}';

/** A JSON value on one line, as typed (`undefined`: not given). */
const jsonText = (value: unknown) => (value === undefined ? <span className="muted">not given</span> : <code>{JSON.stringify(value)}</code>);

function NewDataset() {
  const [name, setName] = useState('');
  const [cases, setCases] = useState('');
  const create = async () => {
    const parsed = parseJsonLines(cases, 'case').map((c, i): DatasetCaseBody => {
      if (!('input' in c)) throw new Error(`Case ${i + 1} has no "input".`);
      return { input: c.input, ...('expected' in c && { expected: c.expected }) };
    });
    const created = await observe('POST /api/datasets', { body: { name, cases: parsed } });
    navigate(`/datasets/${created.id}`);
    return `Dataset “${created.name}” created with ${plural(created.caseCount, 'case')}.`;
  };
  return (
    <CreateForm create={create} submit="Create dataset" pending="Creating…" failure="The dataset was not created">
      <TextField id="dataset-name" label="Name" required maxLength={200} value={name} onChange={setName} />
      <Field
        label="Cases, one JSON object a line"
        htmlFor="dataset-cases"
        hint={
          <>
            Each line is <code>{'{"input": …, "expected": …}'}</code>: the agent gets the input; without an evaluator a case passes when its session has no
            error and the agent’s output equals <code>expected</code> (optional). 1 to 1,000 cases.
          </>
        }
      >
        <textarea rows={5} className="mono" required value={cases} placeholder={CASES_EXAMPLE} onChange={(e) => setCases(e.target.value)} />
      </Field>
    </CreateForm>
  );
}

const DATASET_COLUMNS: Column<DatasetSummary>[] = [
  { header: 'Name', rowHeader: true, cell: (d) => <Link to={`/datasets/${d.id}`}>{d.name}</Link> },
  { header: 'Cases', num: true, cell: (d) => fmtNumber(d.caseCount) },
  { header: 'Created', title: (d) => fmtDateTime(d.createdAt), cell: (d) => timeAgo(d.createdAt) },
];

export function DatasetsPage() {
  const list = useAsync((signal) => observe('GET /api/datasets', { signal }), []);
  return (
    <Page
      title="Datasets"
      subtitle="Cases to run an agent on: each case goes to the agent’s webhook, and the session it logs is scored by an evaluator or by its outcome."
    >
      <Section title="Datasets">
        <AsyncTable
          state={list}
          rows={(d) => d.datasets}
          empty="No datasets yet. Create one below."
          columns={DATASET_COLUMNS}
          rowKey={(d) => d.id}
          testId="datasets"
        />
      </Section>
      <Section title="New dataset">
        <NewDataset />
      </Section>
    </Page>
  );
}

const CASE_COLUMNS: Column<DatasetCase>[] = [
  { header: '#', num: true, rowHeader: true, cell: (c) => c.index + 1 },
  { header: 'Input', className: 'clip', cell: (c) => jsonText(c.input) },
  { header: 'Expected output', className: 'clip', cell: (c) => jsonText(c.expected ?? undefined) },
];

function StartRun({ datasetId }: { datasetId: string }) {
  const evaluators = useAsync((signal) => observe('GET /api/evaluators', { signal }), []);
  const [agentId, setAgentId] = useState('');
  const [webhookUrl, setWebhookUrl] = useState('');
  const [evaluatorId, setEvaluatorId] = useState('');
  const [caseTimeout, setCaseTimeout] = useState('30');
  const start = async () => {
    const run = await observe('POST /api/datasets/{id}/runs', {
      params: { id: datasetId },
      body: { agentId: agentId.trim(), webhookUrl: webhookUrl.trim(), caseTimeoutSeconds: Number(caseTimeout), ...(evaluatorId && { evaluatorId }) },
    });
    navigate(`/runs/${run.id}`);
    return `Run started on ${plural(run.totalCases, 'case')}.`;
  };
  return (
    <CreateForm create={start} submit="Run the dataset" pending="Starting…" failure="The run did not start">
      <div className="form-grid">
        <TextField id="run-agent" label="Agent" required value={agentId} onChange={setAgentId} />
        <Field
          label="Agent webhook URL"
          htmlFor="run-webhook"
          hint="Gets each case as a POST; answers {sessionId, output} after logging the session to observe."
        >
          <input type="url" required value={webhookUrl} placeholder="https://agent.example.com/eval" onChange={(e) => setWebhookUrl(e.target.value)} />
        </Field>
        <Field label="Evaluator" htmlFor="run-evaluator">
          <select value={evaluatorId} onChange={(e) => setEvaluatorId(e.target.value)}>
            <option value="">None: no error, output equals expected</option>
            {evaluators.data?.evaluators.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name} ({e.kind === 'llm_judge' ? 'AI judge' : 'rules'})
              </option>
            ))}
          </select>
        </Field>
        <Field label="Time per case (seconds)" htmlFor="run-timeout">
          <input type="number" min={1} max={600} required value={caseTimeout} onChange={(e) => setCaseTimeout(e.target.value)} />
        </Field>
      </div>
    </CreateForm>
  );
}

const RUN_COLUMNS: Column<EvalRunSummary>[] = [
  { header: 'Started', rowHeader: true, title: (r) => fmtDateTime(r.createdAt), cell: (r) => <Link to={`/runs/${r.id}`}>{timeAgo(r.createdAt)}</Link> },
  { header: 'Agent', cell: (r) => r.agentId },
  { header: 'Status', cell: (r) => <StatusBadge status={r.status} /> },
  { header: 'Passed', num: true, cell: (r) => `${fmtNumber(r.passedCases)} / ${fmtNumber(r.totalCases)}` },
  { header: 'Pass rate', num: true, cell: (r) => (r.completedCases === 0 ? '—' : fmtPercent(r.passedCases / r.completedCases)) },
];

export function DatasetDetailPage({ id }: { id: string }) {
  const dataset = useAsync((signal) => observe('GET /api/datasets/{id}', { params: { id }, signal }), [id]);
  const runs = useAsync((signal) => observe('GET /api/datasets/{id}/runs', { params: { id }, signal }), [id], { pollMs: 5_000 });
  return (
    <Page title={dataset.data?.name ?? 'Dataset'} subtitle={<Link to="/datasets">← All datasets</Link>}>
      <Section title="Cases">
        <Async state={dataset} label="Loading the dataset…">
          {(d) => (
            <>
              <p className="muted small">
                {plural(d.caseCount, 'case')}, created {fmtDateTime(d.createdAt)}.
              </p>
              <Table rows={d.cases} columns={CASE_COLUMNS} rowKey={(c) => c.id} testId="dataset-cases" />
            </>
          )}
        </Async>
      </Section>
      <Section title="Runs">
        <AsyncTable state={runs} rows={(d) => d.runs} empty="No runs yet. Start one below." columns={RUN_COLUMNS} rowKey={(r) => r.id} testId="dataset-runs" />
      </Section>
      <Section title="Run the dataset">
        <StartRun datasetId={id} />
      </Section>
    </Page>
  );
}

function caseOutcome(c: RunCase) {
  if (c.passed === null) return <StatusBadge status="pending" />;
  return c.passed ? <Badge tone="good">passed</Badge> : <Badge tone="bad">failed</Badge>;
}

const RUN_CASE_COLUMNS: Column<RunCase>[] = [
  { header: 'Case', num: true, rowHeader: true, cell: (c) => c.index + 1 },
  { header: 'Result', cell: caseOutcome },
  { header: 'Score', num: true, cell: (c) => fmtScore(c.score) },
  {
    header: 'Session',
    cell: (c) => (c.sessionId ? <Link to={`/sessions/${encodeURIComponent(c.sessionId)}`}>{c.sessionId}</Link> : <span className="muted">none</span>),
  },
  { header: 'Why it failed', cell: (c) => c.error ?? '' },
];

/**
 * Each failed case side by side: the dataset's input and expected output, what the agent answered
 * and why it failed (the evaluator's reasoning, or the run's own check). `datasetCases` undefined:
 * the dataset is still loading (a case missing from a loaded dataset was deleted from it).
 */
function FailedCases({ cases, datasetCases }: { cases: readonly RunCase[]; datasetCases: readonly DatasetCase[] | undefined }) {
  const failed = cases.filter((c) => c.passed === false);
  if (failed.length === 0) return null;
  const byId = new Map((datasetCases ?? []).map((c) => [c.id, c]));
  return (
    <Section title="Failed cases">
      {failed.map((c) => {
        const datasetCase = byId.get(c.caseId);
        return (
          <article key={c.caseId} className="failed-case" data-testid="failed-case" aria-labelledby={`failed-case-${c.index}`}>
            <h3 id={`failed-case-${c.index}`}>Case {c.index + 1}</h3>
            <dl className="facts">
              <dt>Input</dt>
              <dd>
                {datasetCases === undefined ? (
                  <span className="muted">loading…</span>
                ) : datasetCase ? (
                  <JsonView value={datasetCase.input} label={`Case ${c.index + 1} input`} />
                ) : (
                  <span className="muted">deleted from the dataset</span>
                )}
              </dd>
              <dt>Expected</dt>
              <dd>
                {datasetCases === undefined ? (
                  <span className="muted">loading…</span>
                ) : datasetCase?.expected === null || datasetCase === undefined ? (
                  <span className="muted">none</span>
                ) : (
                  <JsonView value={datasetCase.expected} label={`Case ${c.index + 1} expected`} />
                )}
              </dd>
              <dt>Actual</dt>
              <dd>
                {c.actual === null || c.actual === undefined ? (
                  <span className="muted">no answer</span>
                ) : (
                  <JsonView value={c.actual} label={`Case ${c.index + 1} actual`} />
                )}
              </dd>
              <dt>Why it failed</dt>
              <dd>
                {c.reasoning !== null && <p className="result-text">{c.reasoning}</p>}
                {c.error !== null && <p className="result-text">{c.error}</p>}
                {c.reasoning === null && c.error === null && <span className="muted">the evaluator gave no reasoning</span>}
              </dd>
            </dl>
          </article>
        );
      })}
    </Section>
  );
}

export function EvalRunPage({ id }: { id: string }) {
  const [running, setRunning] = useState(true);
  // A running run is followed every 2 s until it completes.
  const run = useAsync(
    async (signal) => {
      const answer = await observe('GET /api/runs/{id}', { params: { id }, signal });
      setRunning(answer.status === 'running');
      return answer;
    },
    [id],
    { pollMs: running ? 2_000 : undefined },
  );
  const dataset = useAsync(
    (signal) => (run.data ? observe('GET /api/datasets/{id}', { params: { id: run.data.datasetId }, signal }) : Promise.resolve(null)),
    [run.data?.datasetId],
  );
  const evaluators = useAsync((signal) => observe('GET /api/evaluators', { signal }), []);
  const evaluatorName = (evaluatorId: string | null) =>
    evaluatorId === null
      ? 'none (no error, output equals expected)'
      : (evaluators.data?.evaluators.find((e) => e.id === evaluatorId)?.name ?? `${evaluatorId} (deleted)`);
  return (
    <Page
      title={dataset.data ? `Run of ${dataset.data.name}` : 'Dataset run'}
      subtitle={run.data ? <Link to={`/datasets/${run.data.datasetId}`}>← The dataset</Link> : <Link to="/datasets">← All datasets</Link>}
    >
      <Async state={run} label="Loading the run…">
        {(r) => (
          <>
            <Section title="Outcome" actions={<StatusBadge status={r.status} />}>
              <Stats>
                <Stat
                  label="Passed"
                  value={`${fmtNumber(r.passedCases)} of ${fmtNumber(r.totalCases)}`}
                  hint={r.completedCases > 0 ? `${fmtPercent(r.passedCases / r.completedCases)} of the cases run` : undefined}
                />
                <Stat label="Failed" value={fmtNumber(r.failedCases)} />
                <Stat label="Cases run" value={`${fmtNumber(r.completedCases)} of ${fmtNumber(r.totalCases)}`} />
                <Stat
                  label="Duration"
                  value={r.finishedAt ? fmtDuration(Date.parse(r.finishedAt) - Date.parse(r.createdAt)) : 'running'}
                  hint={`started ${fmtDateTime(r.createdAt)}`}
                />
              </Stats>
              <p className="muted small">
                Agent <code>{r.agentId}</code>; evaluator: {evaluatorName(r.evaluatorId)}.
              </p>
            </Section>
            <Section title="Cases">
              <Table rows={r.cases} columns={RUN_CASE_COLUMNS} rowKey={(c) => c.caseId} testId="run-cases" />
            </Section>
            <FailedCases cases={r.cases} datasetCases={dataset.data?.cases} />
          </>
        )}
      </Async>
    </Page>
  );
}
