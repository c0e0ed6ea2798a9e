import { useState, type FormEvent, type MouseEvent } from 'react';
import { credentials, gate, hasGateScope, requestsChanged, type Approval, type ApprovalSummary, type AuditEntry } from '../api.ts';
import { AsyncTable, Table, usePolicyNames, type Column } from '../components.tsx';
import { fmtActor, fmtDateTime, fmtDecisionReason, fmtDuration, fmtNumber, fmtPolicy, fmtUsd, timeAgo, type PolicyNames } from '../format.ts';
import { Link, useLocation } from '../router.tsx';
import type { GateSchemas } from '@vigil/sdk/types';
import { entryColumns } from './Audit.tsx';
import { LEVEL_TONES } from './Budgets.tsx';
import { Async, Badge, ErrorMessage, Field, JsonView, Notice, Page, Section, Stat, Stats, StatusBadge, useAction, useAsync, useNow } from '../ui.tsx';

const URGENCY_RANK: Record<string, number> = { critical: 0, high: 1, normal: 2, low: 3 };
const TABS = [
  { value: 'pending', label: 'Pending' },
  { value: 'approved', label: 'Approved' },
  { value: 'denied', label: 'Denied' },
  { value: 'expired', label: 'Expired' },
  { value: 'all', label: 'All' },
] as const;

/** Most urgent first; within an urgency, the longest waiting first. */
export function byUrgencyAndAge(a: ApprovalSummary, b: ApprovalSummary): number {
  return (URGENCY_RANK[a.urgency] ?? 9) - (URGENCY_RANK[b.urgency] ?? 9) || Date.parse(a.createdAt) - Date.parse(b.createdAt) || (a.id < b.id ? -1 : 1);
}

const SHOWN_PARAMS = 3;

/** The first few parameters as "amount: 250 · recipient: acme-ltd", each value cut short; "+2 more" for the rest. */
function KeyParams({ params }: { params: Record<string, unknown> }) {
  const entries = Object.entries(params);
  if (entries.length === 0) return <span className="muted">none</span>;
  const text = (value: unknown) => {
    const raw = typeof value === 'number' ? fmtNumber(value, 6) : typeof value === 'string' ? value : JSON.stringify(value);
    return raw.length > 40 ? `${raw.slice(0, 39)}…` : raw;
  };
  return (
    <span className="params" title={JSON.stringify(params)}>
      {entries.slice(0, SHOWN_PARAMS).map(([name, value], i) => (
        <span key={name}>
          {i > 0 && ' · '}
          <span className="muted">{name}:</span> {text(value)}
        </span>
      ))}
      {entries.length > SHOWN_PARAMS && <span className="muted"> +{entries.length - SHOWN_PARAMS} more</span>}
    </span>
  );
}

/** The queue's columns: a pending request shows how long it has waited (by `now`), a decided one when it was created. */
function queueColumns(tab: (typeof TABS)[number]['value'], now: number): Column<ApprovalSummary>[] {
  return [
    { header: 'Urgency', cell: (r) => <StatusBadge status={r.urgency} /> },
    { header: 'Action', cell: (r) => <code>{r.action}</code> },
    { header: 'Agent', cell: (r) => r.agentId ?? <span className="muted">—</span> },
    { header: 'Parameters', cell: (r) => <KeyParams params={r.params} /> },
    {
      header: 'Policy',
      cell: (r) =>
        r.policyName !== null ? (
          <span title={r.policyId ?? undefined}>{r.policyName}</span>
        ) : r.policyId ? (
          <span className="muted" title={r.policyId}>
            deleted policy
          </span>
        ) : (
          <span className="muted">no rule matched</span>
        ),
    },
    { header: 'Status', cell: (r) => <StatusBadge status={r.status} /> },
    {
      header: tab === 'pending' ? 'Waiting' : 'Created',
      title: (r) => fmtDateTime(r.createdAt),
      cell: (r) => (tab === 'pending' ? fmtDuration(now - Date.parse(r.createdAt)) : timeAgo(r.createdAt)),
    },
  ];
}

export function ApprovalsPage() {
  const { query } = useLocation();
  const tab = TABS.some((t) => t.value === query.get('status')) ? (query.get('status') as (typeof TABS)[number]['value']) : 'pending';
  const requests = useAsync(
    async (signal) => {
      if (tab !== 'pending') return gate('GET /api/requests', { query: { status: tab === 'all' ? undefined : tab, limit: 100 }, signal });
      // One list per urgency, so a flood of low-urgency requests cannot push a critical one off the page.
      const lists = await Promise.all(
        (['critical', 'high', 'normal', 'low'] as const).map((urgency) =>
          gate('GET /api/requests', { query: { status: 'pending', urgency, limit: 500 }, signal }),
        ),
      );
      return lists.flat();
    },
    [tab],
    { pollMs: 3000 },
  );
  const rows = tab === 'pending' ? [...(requests.data ?? [])].sort(byUrgencyAndAge) : (requests.data ?? []);
  const now = useNow(3000);

  return (
    <Page title="Approval queue" subtitle="Actions agents asked to take that a policy routed to a person. Refreshed every 3 seconds.">
      <nav className="tabs" aria-label="Request status">
        {TABS.map((t) => (
          <Link key={t.value} to={t.value === 'pending' ? '/approvals' : `/approvals?status=${t.value}`} aria-current={tab === t.value ? 'page' : undefined}>
            {t.label}
          </Link>
        ))}
      </nav>
      <Section
        title={tab === 'pending' ? 'Waiting for a decision' : `${TABS.find((t) => t.value === tab)!.label} requests`}
        actions={requests.refreshing ? <span className="muted small">refreshing…</span> : null}
      >
        <AsyncTable
          state={{ ...requests, data: requests.data === undefined ? undefined : rows }}
          rows={(data) => data}
          label="Loading requests…"
          empty={tab === 'pending' ? 'Nothing is waiting for a decision. New requests appear here by themselves.' : 'No requests with this status.'}
          columns={queueColumns(tab, now)}
          rowKey={(r) => r.id}
          actions={(r) => (
            <Link to={`/approvals/${r.id}`} className="button small">
              {r.status === 'pending' ? 'Review' : 'Open'}
              <span className="visually-hidden">
                {' '}
                {r.action} request {r.id}
              </span>
            </Link>
          )}
          testId="approval-queue"
        />
      </Section>
      <p className="muted small">
        Use the tabs to see decided requests.{' '}
        <button type="button" className="link" onClick={requests.reload}>
          Refresh now
        </button>
      </p>
    </Page>
  );
}

const DECISION_WORDS: Record<string, string> = {
  auto_approve: 'approved automatically',
  auto_deny: 'denied automatically',
  route_to_human: 'sent to a person',
  route_to_agent: 'sent to an agent',
};

function DecisionForm({ request, onDecided }: { request: Approval; onDecided: (message: string) => void }) {
  const [reason, setReason] = useState('');
  const [missing, setMissing] = useState(false);
  const required = request.policyDecision.requireReason;
  const decide = useAction(async (decision: 'approved' | 'denied') => {
    const result = await gate('POST /api/requests/{id}/decide', {
      params: { id: request.id },
      body: reason.trim() ? { decision, reason: reason.trim() } : { decision },
    });
    requestsChanged();
    if ('approvals' in result) {
      // A vote on a request that needs several approvals, counted without settling it.
      onDecided(`Vote recorded: ${result.approvals.approvedBy.length} of ${result.approvals.required} approvals.`);
      return;
    }
    onDecided(`${result.status === 'approved' ? 'Approved' : 'Denied'} as ${result.decidedBy}.`);
  });
  const submit = (decision: 'approved' | 'denied') => (event: FormEvent | MouseEvent) => {
    event.preventDefault();
    if (required && !reason.trim()) {
      setMissing(true);
      document.getElementById('decision-reason')?.focus();
      return;
    }
    setMissing(false);
    void decide.run(decision);
  };
  if (!hasGateScope('request:decide')) {
    return (
      <p className="muted">
        Your gate key (“{credentials().gate?.keyName}”) does not have the <code>request:decide</code> scope, so you can read this request but not decide it.
      </p>
    );
  }
  return (
    <form onSubmit={submit('approved')} className="stack" aria-label="Decide this request">
      <Field
        label={required ? 'Reason (required by the policy)' : 'Reason (optional)'}
        htmlFor="decision-reason"
        hint={`Recorded with your decision as ${credentials().gate?.actor ?? 'dashboard:you'}, in the audit trail and the webhooks.`}
      >
        <textarea
          rows={3}
          maxLength={5000}
          value={reason}
          required={required}
          aria-invalid={missing ? true : undefined}
          onChange={(e) => setReason(e.target.value)}
        />
      </Field>
      {missing && <ErrorMessage error={new Error('The policy that routed this request requires a reason for the decision.')} title="Reason missing" />}
      <div className="row">
        <button type="submit" className="approve" disabled={decide.pending}>
          Approve
        </button>
        <button type="button" className="danger" onClick={submit('denied')} disabled={decide.pending}>
          Deny
        </button>
      </div>
      {decide.error && <ErrorMessage error={decide.error} title="The decision was not recorded" />}
    </form>
  );
}

type CoveringBudget = GateSchemas.RequestBudgets['budgets'][number];

const BUDGET_COLUMNS: Column<CoveringBudget>[] = [
  { header: 'Budget', cell: (b) => <Link to="/budgets">{b.name}</Link> },
  { header: 'Spent', cell: (b) => fmtUsd(b.spendUsd) },
  { header: 'Soft', cell: (b) => fmtUsd(b.softUsd) },
  { header: 'Hard', cell: (b) => fmtUsd(b.hardUsd) },
  { header: 'Level', cell: (b) => <Badge tone={LEVEL_TONES[b.level]}>{b.level}</Badge> },
];

/** The budget a request's creation met (its `created` entry's details.budget): soft routed it to a person, hard denied it. */
function creationBudget(entries: readonly AuditEntry[] | undefined): { level: string; reason: string } | null {
  const budget = entries?.find((e) => e.event === 'created')?.details?.budget as { level?: unknown; reason?: unknown } | undefined;
  return typeof budget?.level === 'string' && typeof budget.reason === 'string' ? { level: budget.level, reason: budget.reason } : null;
}

/** The budgets covering the request now: what its spend stands at against each threshold. */
function RequestBudgets({ id, routedBy }: { id: string; routedBy: { level: string; reason: string } | null }) {
  const budgets = useAsync((signal) => gate('GET /api/requests/{id}/budgets', { params: { id }, signal }), [id], { pollMs: 5000 });
  return (
    <Section title="Budgets">
      {routedBy && (
        <p data-testid="budget-routing">
          <Badge tone={routedBy.level === 'hard' ? 'bad' : 'warn'}>{routedBy.level === 'hard' ? 'denied by a budget' : 'routed by a budget'}</Badge>{' '}
          {routedBy.level === 'hard' ? 'Denied at creation' : 'Waiting for a person because it was over a soft budget'}: {routedBy.reason}
        </p>
      )}
      <AsyncTable
        state={budgets}
        rows={(d) => d.budgets}
        label="Loading the budgets…"
        empty="No budget covers this request."
        columns={BUDGET_COLUMNS}
        rowKey={(b) => b.name}
        testId="request-budgets"
      />
    </Section>
  );
}

const trailColumns = (policies: PolicyNames): Column<AuditEntry>[] => [
  { header: 'When', cell: (e) => fmtDateTime(e.timestamp) },
  ...entryColumns(policies),
  // The request's hash chain (docs/audit.md "Gate audit chain"): this entry and every one before it verify.
  { header: 'Chain', cell: (e) => (e.chainValid ? <Badge tone="good">valid</Badge> : <Badge tone="bad">broken</Badge>) },
];

export function ApprovalDetailPage({ id }: { id: string }) {
  const request = useAsync((signal) => gate('GET /api/requests/{id}', { params: { id }, signal }), [id], { pollMs: 5000 });
  const audit = useAsync((signal) => gate('GET /api/requests/{id}/audit', { params: { id }, signal }), [id], { pollMs: 5000 });
  const now = useNow(5000);
  const policies = usePolicyNames();
  const [decided, setDecided] = useState<{ id: string; message: string } | null>(null);
  // The decision's audit entry names a chat user (details.userName), which the request does not.
  const decider = (r: Approval) =>
    fmtActor(
      r.decidedBy ?? 'unknown',
      audit.data?.find((e) => (e.event === 'approved' || e.event === 'denied') && e.actor === r.decidedBy)?.details?.userName,
      policies,
    );
  const onDecided = (message: string) => {
    setDecided({ id, message });
    request.reload();
    audit.reload();
  };

  return (
    <Page title={request.data ? `Request: ${request.data.action}` : 'Request'} subtitle={<Link to="/approvals">← Approval queue</Link>}>
      <Async state={request} label="Loading the request…">
        {(r) => {
          const sessionId = typeof r.context.sessionId === 'string' ? r.context.sessionId : null;
          return (
            <>
              {decided?.id === r.id && <Notice>{decided.message}</Notice>}
              <Stats>
                <Stat
                  label="Status"
                  value={
                    <span data-testid="request-status">
                      <StatusBadge status={r.status} />
                    </span>
                  }
                />
                <Stat label="Urgency" value={<StatusBadge status={r.urgency} />} />
                <Stat label="Created" value={timeAgo(r.createdAt)} hint={fmtDateTime(r.createdAt)} />
                <Stat
                  label="Expires"
                  value={r.expiresAt ? (r.status === 'pending' ? `in ${fmtDuration(Date.parse(r.expiresAt) - now)}` : fmtDateTime(r.expiresAt)) : 'never'}
                />
                {r.approvals && (
                  <Stat
                    label="Approvals"
                    value={
                      <span data-testid="request-approvals">
                        {r.approvals.approvedBy.length} of {r.approvals.required}
                      </span>
                    }
                    hint={[
                      r.approvals.approvedBy.length > 0 ? `approved by ${r.approvals.approvedBy.join(', ')}` : 'no approval yet',
                      r.approvals.deniedBy.length > 0 ? `denied by ${r.approvals.deniedBy.join(', ')}` : null,
                      r.approvals.groups.length > 0 ? `from ${r.approvals.groups.map((g) => `group:${g}`).join(', ')}` : null,
                    ]
                      .filter((part) => part !== null)
                      .join(' · ')}
                  />
                )}
                {r.escalation.tier > 0 && (
                  <Stat
                    label="Escalation"
                    value={<span data-testid="request-escalation">tier {r.escalation.tier}</span>}
                    hint={r.escalation.deadlineAt ? `deadline ${fmtDateTime(r.escalation.deadlineAt)}` : undefined}
                  />
                )}
                <Stat
                  label="Decided by"
                  value={
                    r.decidedBy ? (
                      <code data-testid="decided-by" title={r.decidedBy}>
                        {decider(r)}
                      </code>
                    ) : (
                      '—'
                    )
                  }
                  hint={r.decidedAt ? fmtDateTime(r.decidedAt) : undefined}
                />
              </Stats>
              {r.status === 'pending' ? (
                <Section title="Your decision">
                  <DecisionForm request={r} onDecided={onDecided} />
                </Section>
              ) : (
                <Section title="Decision">
                  <p>
                    <StatusBadge status={r.status} /> by <code title={r.decidedBy ?? undefined}>{decider(r)}</code>{' '}
                    {r.decidedAt && <>on {fmtDateTime(r.decidedAt)}</>}
                  </p>
                  {r.decidedBy?.startsWith('grant:') && (
                    <p data-testid="approved-by-grant">
                      Approved automatically by the standing <Link to="/grants">grant {r.decidedBy.slice('grant:'.length)}</Link>: a person approved this action
                      for this agent or session ahead of time.
                    </p>
                  )}
                  {r.decisionReason && (
                    <p>
                      <strong>Reason:</strong>{' '}
                      <span data-testid="decision-reason" title={r.decisionReason}>
                        {fmtDecisionReason(r.decisionReason)}
                      </span>
                    </p>
                  )}
                  {r.confirmedAt && (
                    <>
                      <p>
                        <Badge tone="good">executed</Badge> confirmed {fmtDateTime(r.confirmedAt)}
                      </p>
                      <JsonView value={r.executionResult} label="Execution result" />
                    </>
                  )}
                </Section>
              )}
              <div className="grid-2">
                <Section title="Parameters">
                  <JsonView value={r.params} label="Request parameters" />
                </Section>
                <Section title="Context">
                  <JsonView value={r.context} label="Request context" />
                  {sessionId && credentials().observeKey && (
                    <p>
                      <Link to={`/sessions/${encodeURIComponent(sessionId)}`}>Open the agent’s session {sessionId}</Link>
                    </p>
                  )}
                </Section>
              </div>
              <RequestBudgets id={r.id} routedBy={creationBudget(audit.data)} />
              <Section title="Policy decision">
                <dl className="facts">
                  <dt>Outcome</dt>
                  <dd>
                    <code>{r.policyDecision.decision}</code> — {DECISION_WORDS[r.policyDecision.decision]}
                  </dd>
                  <dt>Policy</dt>
                  <dd>
                    {r.policyDecision.policyId ? (
                      <Link to={`/policies#policy-${r.policyDecision.policyId}`} title={r.policyDecision.policyId}>
                        {fmtPolicy(r.policyDecision.policyId, policies)}
                      </Link>
                    ) : (
                      'no rule matched (the default sends requests to a person)'
                    )}
                  </dd>
                  <dt>Approvers</dt>
                  <dd>{r.policyDecision.approvers.length ? r.policyDecision.approvers.join(', ') : '—'}</dd>
                  <dt>Channels</dt>
                  <dd>{r.policyDecision.channels.length ? r.policyDecision.channels.join(', ') : '—'}</dd>
                  <dt>Reason required</dt>
                  <dd>{r.policyDecision.requireReason ? 'yes' : 'no'}</dd>
                </dl>
              </Section>
            </>
          );
        }}
      </Async>
      <Section title="Audit trail">
        <Async state={audit} isEmpty={(d) => d.length === 0} empty="No audit entries.">
          {(entries) => <Table rows={entries} columns={trailColumns(policies)} rowKey={(_, i) => String(i)} testId="audit-trail" />}
        </Async>
      </Section>
    </Page>
  );
}
