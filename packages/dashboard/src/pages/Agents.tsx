import { useState, type FormEvent } from 'react';
import { ApiError, observe, type Agent, type AgentHealth } from '../api.ts';
import { InlineSelect, Table, TableScroll, usePolicyNames, type Column } from '../components.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtPercent, fmtPolicy, fmtScore, fmtSignedScore, fmtUsd, plural, timeAgo, type PolicyNames } from '../format.ts';
import { Chart } from '../lazy-chart.tsx';
import { Link } from '../router.tsx';
import { Async, Badge, Empty, ErrorMessage, Field, Meter, Notice, Page, Section, Stat, Stats, StatusBadge, useAction, useAsync } from '../ui.tsx';

function Trend({ health }: { health: Pick<AgentHealth, 'trend' | 'trendDelta'> }) {
  const arrow = health.trend === 'improving' ? '▲' : health.trend === 'degrading' ? '▼' : '■';
  const delta = fmtSignedScore(health.trendDelta);
  return (
    <span className={`trend trend-${health.trend}`}>
      <span aria-hidden="true">{arrow}</span> {health.trend} ({delta})
    </span>
  );
}

export function AgentsPage() {
  const agents = useAsync((signal) => observe('GET /api/agents', { signal }), [], { pollMs: 15_000 });
  const overview = useAsync((signal) => observe('GET /api/health/overview', { query: { window: 7 }, signal }), [], { pollMs: 60_000 });
  const healthOf = new Map(overview.data?.agents.map((h) => [h.agentId, h]) ?? []);

  return (
    <Page title="Agents" subtitle="Health over the last 7 days (0–100, weighted dimensions), trend against the 7 days before, and pause state.">
      <Section title="Agents">
        <Async state={agents} label="Loading agents…" isEmpty={(d) => d.agents.length === 0} empty="No agents yet: an agent appears with its first event.">
          {(data) => (
            <TableScroll>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Agent</th>
                    <th scope="col">State</th>
                    <th scope="col">Health (7 days)</th>
                    <th scope="col">Trend</th>
                    <th scope="col" className="num">
                      Sessions
                    </th>
                    <th scope="col">Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {data.agents.map((a) => {
                    const health = healthOf.get(a.id);
                    return (
                      <tr key={a.id}>
                        <td>
                          <Link to={`/agents/${encodeURIComponent(a.id)}`}>{a.name}</Link>
                          {a.name !== a.id && <div className="muted small">{a.id}</div>}
                        </td>
                        <td>
                          {a.pausedAt ? (
                            <Badge tone="bad" title={a.pauseReason ?? undefined}>
                              paused
                            </Badge>
                          ) : (
                            <Badge tone="good">running</Badge>
                          )}
                          {a.modelOverride && (
                            <Badge tone="warn" title="Model override set by a guardrail">
                              → {a.modelOverride}
                            </Badge>
                          )}
                        </td>
                        <td>
                          {health ? (
                            <span className="score">
                              <Meter value={health.overallScore} label={`Health of ${a.name}`} /> {fmtScore(health.overallScore)}
                            </span>
                          ) : (
                            <span className="muted">{overview.loading ? '…' : 'no sessions in 7 days'}</span>
                          )}
                        </td>
                        <td>{health ? <Trend health={health} /> : '—'}</td>
                        <td className="num">{fmtNumber(a.sessionCount)}</td>
                        <td title={fmtDateTime(a.lastSeenAt)}>{timeAgo(a.lastSeenAt)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableScroll>
          )}
        </Async>
      </Section>
    </Page>
  );
}

const DIMENSION_LABELS: Record<string, string> = {
  error_rate: 'Error rate',
  cost_efficiency: 'Cost efficiency',
  tool_success: 'Tool success',
  latency: 'Latency',
  completion_rate: 'Completion rate',
};

const HEALTH_WINDOWS = [1, 7, 14, 30, 90].map((d) => ({ value: d, label: d === 1 ? 'Last day' : `Last ${d} days` }));

function rawValue(name: string, value: number): string {
  switch (name) {
    case 'cost_efficiency':
      return `${fmtUsd(value)} per session`;
    case 'latency':
      return `${fmtDuration(value)} per session`;
    default:
      return fmtPercent(value);
  }
}

const DIMENSION_COLUMNS: Column<AgentHealth['dimensions'][number]>[] = [
  { header: 'Dimension', rowHeader: true, cell: (d) => DIMENSION_LABELS[d.name] ?? d.name },
  {
    header: 'Score',
    cell: (d) => (
      <span className="score">
        <Meter value={d.score} label={`${DIMENSION_LABELS[d.name] ?? d.name} score`} /> {fmtScore(d.score)}
      </span>
    ),
  },
  { header: 'Weight', num: true, cell: (d) => fmtPercent(d.weight, 0) },
  { header: 'Measured', cell: (d) => rawValue(d.name, d.rawValue) },
  { header: 'How it is scored', className: 'muted small', cell: (d) => d.description },
];

function PauseControls({ agent, policies, onChanged }: { agent: Agent; policies: PolicyNames; onChanged: () => void }) {
  const [reason, setReason] = useState('');
  const [clearModel, setClearModel] = useState(false);
  const [clearPolicy, setClearPolicy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const params = { id: agent.id };
  const pause = useAction(async () => {
    await observe('POST /api/agents/{id}/pause', { params, body: reason.trim() ? { reason: reason.trim() } : {} });
    setDone('Agent paused. It reads its pause from GET /api/agents/:id and should stop taking actions.');
    setReason('');
    onChanged();
  });
  const resume = useAction(async () => {
    await observe('POST /api/agents/{id}/resume', { params, body: { clearModelOverride: clearModel, clearApprovalPolicy: clearPolicy } });
    setDone('Agent resumed.');
    onChanged();
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    void (agent.pausedAt ? resume.run() : pause.run());
  };
  return (
    <form onSubmit={submit} className="stack">
      {agent.pausedAt ? (
        <>
          <p>
            <Badge tone="bad">paused</Badge> since {fmtDateTime(agent.pausedAt)}: {agent.pauseReason ?? 'no reason given'}
          </p>
          {agent.modelOverride && (
            <label className="checkbox">
              <input type="checkbox" checked={clearModel} onChange={(e) => setClearModel(e.target.checked)} /> Also clear the model override (
              {agent.modelOverride})
            </label>
          )}
          {agent.approvalPolicyId && (
            <label className="checkbox">
              <input type="checkbox" checked={clearPolicy} onChange={(e) => setClearPolicy(e.target.checked)} /> Also clear the approval policy (
              <span title={agent.approvalPolicyId}>{fmtPolicy(agent.approvalPolicyId, policies)}</span>)
            </label>
          )}
          <div>
            <button type="submit" disabled={resume.pending}>
              {resume.pending ? 'Resuming…' : 'Resume agent'}
            </button>
          </div>
        </>
      ) : (
        <>
          <Field label="Reason for pausing (optional)" htmlFor="pause-reason">
            <input value={reason} maxLength={1000} onChange={(e) => setReason(e.target.value)} placeholder="e.g. runaway spend" />
          </Field>
          <div>
            <button type="submit" className="danger" disabled={pause.pending}>
              {pause.pending ? 'Pausing…' : 'Pause agent'}
            </button>
          </div>
        </>
      )}
      {(pause.error ?? resume.error) && <ErrorMessage error={(pause.error ?? resume.error)!} />}
      {done && <Notice>{done}</Notice>}
    </form>
  );
}

export function AgentDetailPage({ id }: { id: string }) {
  const [windowDays, setWindowDays] = useState(7);
  const agent = useAsync((signal) => observe('GET /api/agents/{id}', { params: { id }, signal }), [id]);
  const policies = usePolicyNames();
  const health = useAsync(
    (signal) =>
      observe('GET /api/agents/{id}/health', { params: { id }, query: { window: windowDays }, signal }).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }),
    [id, windowDays],
  );
  const history = useAsync((signal) => observe('GET /api/health/history', { query: { agentId: id, days: 30 }, signal }), [id]);
  const sessions = useAsync((signal) => observe('GET /api/sessions', { query: { agentId: id, limit: 10 }, signal }), [id]);

  return (
    <Page title={agent.data?.name ?? id} subtitle={<Link to="/agents">← All agents</Link>}>
      <Async state={agent} label="Loading the agent…">
        {(a) => (
          <>
            <Stats>
              <Stat label="Agent id" value={<code>{a.id}</code>} />
              <Stat label="Sessions" value={fmtNumber(a.sessionCount)} />
              <Stat label="First seen" value={timeAgo(a.firstSeenAt)} hint={fmtDateTime(a.firstSeenAt)} />
              <Stat label="Last seen" value={timeAgo(a.lastSeenAt)} hint={fmtDateTime(a.lastSeenAt)} />
              <Stat label="Model override" value={a.modelOverride ?? '—'} />
              <Stat
                label="Approval policy"
                value={a.approvalPolicyId ? <span title={a.approvalPolicyId}>{fmtPolicy(a.approvalPolicyId, policies)}</span> : '—'}
              />
            </Stats>
            <Section title="Pause and resume">
              <PauseControls agent={a} policies={policies} onChanged={agent.reload} />
            </Section>
          </>
        )}
      </Async>
      <Section title="Health" actions={<InlineSelect id="health-window" label="Window" value={windowDays} options={HEALTH_WINDOWS} onChange={setWindowDays} />}>
        <Async state={health} label="Computing health…">
          {(h) =>
            h === null ? (
              <Empty>No session of this agent started in the last {windowDays} days, so there is nothing to score.</Empty>
            ) : (
              <>
                <Stats>
                  <Stat label="Overall score" value={`${fmtScore(h.overallScore)} / 100`} />
                  <Stat label="Trend" value={<Trend health={h} />} hint="against the window before" />
                  <Stat label="Sessions scored" value={fmtNumber(h.sessionCount)} />
                </Stats>
                <Table rows={h.dimensions} columns={DIMENSION_COLUMNS} rowKey={(d) => d.name} />
              </>
            )
          }
        </Async>
      </Section>
      <div className="grid-2">
        <Section title="Health over 30 days">
          <Async state={history} isEmpty={(d) => d.snapshots.length === 0} empty="No daily snapshot yet: one is saved the first time health is read each day.">
            {(d) => (
              <Chart
                kind="line"
                labels={d.snapshots.map((s) => s.date.slice(5))}
                series={[{ label: 'Overall score', data: d.snapshots.map((s) => s.overallScore), color: '--chart-blue' }]}
                max={100}
                description={`Daily overall health score over ${plural(d.snapshots.length, 'day')}, latest ${fmtScore(d.snapshots.at(-1)?.overallScore)}.`}
              />
            )}
          </Async>
        </Section>
        <Section title="Recent sessions">
          <Async state={sessions} isEmpty={(d) => d.sessions.length === 0} empty="No sessions.">
            {(d) => (
              <ul className="plain">
                {d.sessions.map((s) => (
                  <li key={s.id}>
                    <Link to={`/sessions/${encodeURIComponent(s.id)}`}>{s.id}</Link> <StatusBadge status={s.status} />{' '}
                    <span className="muted">
                      {timeAgo(s.startedAt)} · {plural(s.eventCount, 'event')} · {fmtUsd(s.totalCostUsd)}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </Async>
        </Section>
      </div>
    </Page>
  );
}
