import { useState } from 'react';
import { observe, type ObserveAnswer, type ObserveQuery } from '../api.ts';
import { AsyncTable, CreateForm, InlineSelect, TableScroll, TextField, type Column } from '../components.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtPercent, fmtUsd, plural, timeAgo } from '../format.ts';
import { meanInterval } from '../intervals.ts';
import { Chart } from '../lazy-chart.tsx';
import { Link, navigate } from '../router.tsx';
import { Async, Badge, ErrorMessage, Field, Notice, Page, Section, StatusBadge, useAction, useAsync } from '../ui.tsx';

const METRIC_LABELS: Record<string, string> = {
  error_rate: 'Error rate',
  completion_rate: 'Completion rate',
  tool_success_rate: 'Tool success rate',
  avg_cost: 'Cost per session',
  avg_tokens: 'Tokens per session',
  avg_duration: 'Session duration',
  avg_latency: 'Tool latency',
};

function metricValue(metric: string, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (metric.endsWith('_rate')) return fmtPercent(value);
  if (metric === 'avg_cost') return fmtUsd(value);
  if (metric === 'avg_duration' || metric === 'avg_latency') return fmtDuration(value);
  return fmtNumber(value, 1);
}

type Results = ObserveAnswer<'GET /api/benchmarks/{id}/results'>;

/**
 * Every variant's mean of one metric with its 95 % interval, on one chart, the metric picked above
 * it; the table under the chart says the same in text.
 */
function VariantsChart({ results }: { results: Results }) {
  const metrics = Object.keys(results.variants[0]?.metrics ?? {});
  const [metric, setMetric] = useState(metrics[0] ?? '');
  const label = METRIC_LABELS[metric] ?? metric;
  const rows = results.variants.map((v) => {
    const stats = v.metrics[metric];
    return { variant: v, stats, interval: stats ? meanInterval(stats, metric.endsWith('_rate') ? [0, 1] : [0, Number.POSITIVE_INFINITY]) : null };
  });
  const describe = rows
    .map(
      ({ variant, stats, interval }) =>
        `${variant.variantName}: ${metricValue(metric, stats?.mean)}${interval ? ` (95% interval ${metricValue(metric, interval.lower)} to ${metricValue(metric, interval.upper)})` : ''}`,
    )
    .join('; ');
  return (
    <div data-testid="variants-chart">
      <InlineSelect
        id="bench-chart-metric"
        label="Metric"
        value={metric}
        options={metrics.map((m) => ({ value: m, label: METRIC_LABELS[m] ?? m }))}
        onChange={setMetric}
      />
      <Chart
        kind="interval"
        labels={rows.map((r) => r.variant.variantName)}
        series={[{ label: `${label}, mean`, data: rows.map((r) => r.stats?.mean ?? null), color: '--chart-blue' }]}
        intervals={rows.map((r) => (r.interval ? [r.interval.lower, r.interval.upper] : null))}
        description={`${label} by variant, mean with 95% interval. ${describe}.`}
        yLabel={label}
        format={(value) => metricValue(metric, value)}
      />
      <TableScroll>
        <table>
          <caption>{label} by variant: mean and 95% interval (the chart above as a table)</caption>
          <thead>
            <tr>
              <th scope="col">Variant</th>
              <th scope="col" className="num">
                Sessions
              </th>
              <th scope="col" className="num">
                Mean
              </th>
              <th scope="col">95% interval</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ variant, stats, interval }) => (
              <tr key={variant.variantId}>
                <th scope="row">{variant.variantName}</th>
                <td className="num">{fmtNumber(stats?.count ?? 0)}</td>
                <td className="num">{metricValue(metric, stats?.mean)}</td>
                <td>
                  {interval ? (
                    `${metricValue(metric, interval.lower)} … ${metricValue(metric, interval.upper)}`
                  ) : (
                    <span className="muted">too few sessions</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </div>
  );
}

type BenchmarkSummary = ObserveAnswer<'GET /api/benchmarks'>['benchmarks'][number];
type StatusChoice = NonNullable<ObserveQuery<'GET /api/benchmarks'>['status']> | '';
const STATUS_CHOICES: { value: StatusChoice; label: string }[] = (['', 'draft', 'running', 'completed', 'cancelled'] as const).map((s) => ({
  value: s,
  label: s || 'Any',
}));

function NewBenchmark() {
  const [name, setName] = useState('');
  const [agentId, setAgentId] = useState('');
  const [variants, setVariants] = useState([
    { name: 'A', tag: '' },
    { name: 'B', tag: '' },
  ]);
  const create = async () => {
    const created = await observe('POST /api/benchmarks', {
      body: { name, ...(agentId.trim() && { agentId: agentId.trim() }), variants: variants.map((v) => ({ name: v.name.trim(), tag: v.tag.trim() })) },
    });
    navigate(`/benchmarks/${created.id}`);
    return `Benchmark “${created.name}” created.`;
  };
  const setVariant = (index: number, field: 'name' | 'tag', value: string) =>
    setVariants((vs) => vs.map((v, i) => (i === index ? { ...v, [field]: value } : v)));
  return (
    <CreateForm create={create} submit="Create benchmark (draft)" pending="Creating…" failure="The benchmark was not created">
      <div className="form-grid">
        <TextField id="bench-name" label="Name" required value={name} onChange={setName} />
        <TextField id="bench-agent" label="Agent (optional)" value={agentId} onChange={setAgentId} />
      </div>
      <fieldset>
        <legend>Variants (a variant’s sessions carry its tag)</legend>
        {variants.map((v, i) => (
          <div className="form-grid" key={i}>
            <Field label={`Variant ${i + 1} name`} htmlFor={`bench-v${i}-name`}>
              <input id={`bench-v${i}-name`} required value={v.name} onChange={(e) => setVariant(i, 'name', e.target.value)} />
            </Field>
            <Field label={`Variant ${i + 1} session tag`} htmlFor={`bench-v${i}-tag`}>
              <input id={`bench-v${i}-tag`} required value={v.tag} placeholder="e.g. prompt-v2" onChange={(e) => setVariant(i, 'tag', e.target.value)} />
            </Field>
          </div>
        ))}
        <div className="row">
          <button
            type="button"
            className="secondary small"
            disabled={variants.length >= 10}
            onClick={() => setVariants((vs) => [...vs, { name: String.fromCharCode(65 + vs.length), tag: '' }])}
          >
            Add a variant
          </button>
          {variants.length > 2 && (
            <button type="button" className="secondary small" onClick={() => setVariants((vs) => vs.slice(0, -1))}>
              Remove the last variant
            </button>
          )}
        </div>
      </fieldset>
    </CreateForm>
  );
}

const BENCHMARK_COLUMNS: Column<BenchmarkSummary>[] = [
  { header: 'Name', cell: (b) => <Link to={`/benchmarks/${b.id}`}>{b.name}</Link> },
  { header: 'Status', cell: (b) => <StatusBadge status={b.status} /> },
  { header: 'Variants', cell: (b) => b.variants.map((v) => `${v.name} (${v.tag})`).join(' vs ') },
  { header: 'Agent', cell: (b) => b.agentId ?? <span className="muted">any</span> },
  { header: 'Created', title: (b) => fmtDateTime(b.createdAt), cell: (b) => timeAgo(b.createdAt) },
];

export function BenchmarksPage() {
  const [status, setStatus] = useState<StatusChoice>('');
  const list = useAsync((signal) => observe('GET /api/benchmarks', { query: { status: status || undefined, limit: 100 }, signal }), [status]);
  return (
    <Page title="Benchmarks" subtitle="A/B comparisons of agent variants, identified by session tags, with significance tests per metric.">
      <Section title="Benchmarks" actions={<InlineSelect id="bench-status" label="Status" value={status} options={STATUS_CHOICES} onChange={setStatus} />}>
        <AsyncTable state={list} rows={(d) => d.benchmarks} empty="No benchmarks yet. Create one below." columns={BENCHMARK_COLUMNS} rowKey={(b) => b.id} />
      </Section>
      <Section title="New benchmark">
        <NewBenchmark />
      </Section>
    </Page>
  );
}

export function BenchmarkDetailPage({ id }: { id: string }) {
  const benchmark = useAsync((signal) => observe('GET /api/benchmarks/{id}', { params: { id }, signal }), [id]);
  const status = benchmark.data?.status;
  const results = useAsync(
    (signal) => (status && status !== 'draft' ? observe('GET /api/benchmarks/{id}/results', { params: { id }, signal }) : Promise.resolve(null)),
    [id, status],
  );
  const [done, setDone] = useState<string | null>(null);
  const move = useAction(async (next: 'running' | 'completed' | 'cancelled') => {
    await observe('PUT /api/benchmarks/{id}/status', { params: { id }, body: { status: next } });
    setDone(
      next === 'running'
        ? 'Benchmark started: results are computed live until it completes.'
        : next === 'completed'
          ? 'Benchmark completed: its results are frozen.'
          : 'Benchmark cancelled.',
    );
    benchmark.reload();
  });

  return (
    <Page title={benchmark.data?.name ?? 'Benchmark'} subtitle={<Link to="/benchmarks">← All benchmarks</Link>}>
      <Async state={benchmark} label="Loading the benchmark…">
        {(b) => (
          <Section
            title="Variants"
            actions={
              <div className="row">
                <StatusBadge status={b.status} />
                {b.status === 'draft' && (
                  <button type="button" onClick={() => void move.run('running')} disabled={move.pending}>
                    Start
                  </button>
                )}
                {b.status === 'running' && (
                  <button type="button" onClick={() => void move.run('completed')} disabled={move.pending}>
                    Complete and freeze results
                  </button>
                )}
                {(b.status === 'draft' || b.status === 'running') && (
                  <button type="button" className="secondary" onClick={() => void move.run('cancelled')} disabled={move.pending}>
                    Cancel
                  </button>
                )}
              </div>
            }
          >
            {b.description && <p>{b.description}</p>}
            {move.error && <ErrorMessage error={move.error} title="Status not changed" />}
            {done && <Notice>{done}</Notice>}
            <TableScroll>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Variant</th>
                    <th scope="col">Session tag</th>
                    <th scope="col">Agent</th>
                    <th scope="col" className="num">
                      Sessions
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {b.variants.map((v) => (
                    <tr key={v.id}>
                      <td>{v.name}</td>
                      <td>
                        <Link to={`/sessions?tags=${encodeURIComponent(v.tag)}`}>{v.tag}</Link>
                      </td>
                      <td>{v.agentId ?? b.agentId ?? <span className="muted">any</span>}</td>
                      <td className="num">
                        {fmtNumber(v.sessionCount)}
                        {b.minSessionsPerVariant !== undefined && (v.sessionCount ?? 0) < b.minSessionsPerVariant && (
                          <Badge tone="warn" title={`At least ${b.minSessionsPerVariant} sessions are needed to name a winner`}>
                            below minimum
                          </Badge>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          </Section>
        )}
      </Async>
      {status === 'draft' ? (
        <Section title="Results">
          <p className="empty">Results appear once the benchmark is started (every variant needs at least one session).</p>
        </Section>
      ) : (
        status && (
          <Section title="Results">
            <Async state={results} label="Computing results…">
              {(r) =>
                r && (
                  <>
                    <p className="summary">{r.summary}</p>
                    <p className="muted small">
                      Computed {fmtDateTime(r.computedAt)}. Significant when p &lt; 0.05 (*** p &lt; 0.01, ** p &lt; 0.05, * p &lt; 0.1).
                    </p>
                    <VariantsChart results={r} />
                    <TableScroll>
                      <table>
                        <caption>Per-variant means (± standard deviation)</caption>
                        <thead>
                          <tr>
                            <th scope="col">Metric</th>
                            {r.variants.map((v) => (
                              <th scope="col" key={v.variantId} className="num">
                                {v.variantName} ({plural(v.sessionCount, 'session')})
                              </th>
                            ))}
                          </tr>
                        </thead>
                        <tbody>
                          {Object.keys(r.variants[0]?.metrics ?? {}).map((metric) => (
                            <tr key={metric}>
                              <th scope="row">{METRIC_LABELS[metric] ?? metric}</th>
                              {r.variants.map((v) => {
                                const s = v.metrics[metric];
                                return (
                                  <td key={v.variantId} className="num">
                                    {metricValue(metric, s?.mean)}
                                    {s?.stddev !== null && s?.stddev !== undefined && !metric.endsWith('_rate') && (
                                      <span className="muted"> ± {metricValue(metric, s.stddev)}</span>
                                    )}
                                  </td>
                                );
                              })}
                            </tr>
                          ))}
                        </tbody>
                      </table>
                    </TableScroll>
                    <TableScroll>
                      <table>
                        <caption>Comparisons (differences are B − A)</caption>
                        <thead>
                          <tr>
                            <th scope="col">Metric</th>
                            <th scope="col">A vs B</th>
                            <th scope="col" className="num">
                              Difference
                            </th>
                            <th scope="col">Test</th>
                            <th scope="col" className="num">
                              p-value
                            </th>
                            <th scope="col">95% interval</th>
                            <th scope="col">Verdict</th>
                          </tr>
                        </thead>
                        <tbody>
                          {r.comparisons.map((c, i) => (
                            <tr key={i} className={c.significant ? 'highlight' : undefined}>
                              <th scope="row">{METRIC_LABELS[c.metric] ?? c.metric}</th>
                              <td>
                                {c.variantA.name} vs {c.variantB.name}
                              </td>
                              <td className="num">
                                {metricValue(c.metric, c.absoluteDiff)}
                                {c.percentDiff !== null && (
                                  <span className="muted">
                                    {' '}
                                    ({c.percentDiff > 0 ? '+' : ''}
                                    {fmtNumber(c.percentDiff, 1)}%)
                                  </span>
                                )}
                              </td>
                              <td>
                                {c.testType === 'welch_t' ? 'Welch t' : 'χ²'}
                                {c.testStatistic !== null && <span className="muted"> = {fmtNumber(c.testStatistic, 3)}</span>}
                              </td>
                              <td className="num">{c.pValue < 0.0001 ? c.pValue.toExponential(2) : fmtNumber(c.pValue, 4)}</td>
                              <td>
                                {c.confidenceInterval
                                  ? `${metricValue(c.metric, c.confidenceInterval.lower)} … ${metricValue(c.metric, c.confidenceInterval.upper)}`
                                  : '—'}
                              </td>
                              <td>
                                {c.winner ? (
                                  <Badge tone="good">
                                    {c.winner} wins {c.confidence}
                                  </Badge>
                                ) : c.significant && c.belowMinimum ? (
                                  <Badge tone="warn">significant, too few sessions</Badge>
                                ) : c.degenerate ? (
                                  <span className="muted">{c.degenerate.replace(/_/g, ' ')}</span>
                                ) : (
                                  <span className="muted">no significant difference</span>
                                )}
                              </td>
                            </tr>
                          ))}
                        </tbody>
                      </table>
                    </TableScroll>
                  </>
                )
              }
            </Async>
          </Section>
        )
      )}
    </Page>
  );
}
