import { useState } from 'react';
import { gate, observe, type AuditEntry, type AuditListEntry, type GateQuery } from '../api.ts';
import { CreateForm, CursorPager, Filters, Table, usePolicyNames, type Column } from '../components.tsx';
import { fmtActor, fmtDateTime, fmtDecisionReason, fmtPolicy, fmtRule, isChatActor, timeAgo, type PolicyNames } from '../format.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Badge, Field, Page, Section, StatusBadge, useAsync } from '../ui.tsx';

const PAGE_SIZE = 50;
const EVENTS = ['created', 'approved', 'denied', 'expired', 'confirmed', 'decision_refused'] as const;

/**
 * "dashboard:Ada (key ops-bot · …9f3c21ab)": the actor, which a session names itself, and the API
 * key behind it, named as it was then. The gate's own actions (policy, expiry) have no key; a chat
 * user reads "Slack · alice (U123)", with the user name the entry recorded; a policy reads by its
 * name, with the actor as stored on hover.
 */
export function AuditActor({
  entry,
  policies,
}: {
  entry: Pick<AuditEntry, 'actor' | 'actorKeyId' | 'actorKeyName'> & { details?: AuditEntry['details'] };
  policies?: PolicyNames;
}) {
  const shown = fmtActor(entry.actor, entry.details?.userName, policies);
  return (
    <>
      {shown === entry.actor ? <code>{entry.actor}</code> : <span title={entry.actor}>{shown}</span>}
      {entry.actorKeyId !== null && (
        <span className="muted small" title={`API key “${entry.actorKeyName}” (id ${entry.actorKeyId}), named so at the time`}>
          {' '}
          (key {entry.actorKeyName} · …{entry.actorKeyId.slice(-8)})
        </span>
      )}
    </>
  );
}

/**
 * An entry's details as text. A chat user's platform and user name are already in the actor; a
 * refused click reads "tried to approve: not among the deciders of this request"; a policy's
 * decision names the policy and counts its rule from 1 ("policy “payments” · rule 2").
 */
export function auditDetails(entry: Pick<AuditEntry, 'actor' | 'event' | 'details'>, policies?: PolicyNames): string {
  const { policyId, ruleIndex, ...details } = entry.details ?? {};
  // A policy's own reason already names the policy and rule.
  const reasonNamesPolicy = typeof details.reason === 'string' && fmtDecisionReason(details.reason) !== details.reason;
  if (typeof details.reason === 'string') details.reason = fmtDecisionReason(details.reason);
  let refusal: string | null = null;
  if (entry.event === 'decision_refused') {
    refusal = `tried to ${details.attempted === 'denied' ? 'deny' : 'approve'}${typeof details.reason === 'string' ? `: ${details.reason}` : ''}`;
    delete details.attempted;
    delete details.reason;
  }
  if (isChatActor(entry.actor)) {
    delete details.platform;
    delete details.userName;
  }
  const parts = Object.entries(details).map(([name, value]) => `${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  if (typeof policyId === 'string' && !reasonNamesPolicy)
    parts.push(`${fmtPolicy(policyId, policies)}${typeof ruleIndex === 'number' ? ` · ${fmtRule(ruleIndex)}` : ''}`);
  if (refusal !== null) parts.unshift(refusal);
  return parts.length === 0 ? '—' : parts.join(' · ');
}

/** The event of an entry; a refused chat click is spelled out. */
export function AuditEvent({ event }: { event: string }) {
  return event === 'decision_refused' ? <Badge tone="bad">decision refused</Badge> : <StatusBadge status={event} />;
}

/** The columns every list of audit entries shows after its "When"; the details as stored on hover. */
export function entryColumns(policies: PolicyNames): Column<Omit<AuditEntry, 'chainValid'>>[] {
  return [
    { header: 'Event', cell: (e) => <AuditEvent event={e.event} /> },
    { header: 'Actor (key)', cell: (e) => <AuditActor entry={e} policies={policies} /> },
    { header: 'Details', className: 'clip', title: (e) => JSON.stringify(e.details), cell: (e) => auditDetails(e, policies) },
  ];
}

const REQUEST_COLUMN: Column<AuditListEntry> = {
  header: 'Request',
  cell: (e) => (
    <Link to={`/approvals/${e.requestId}`}>
      <code>{e.action}</code>
      <span className="visually-hidden"> request {e.requestId}</span>
    </Link>
  ),
};

function logColumns(policies: PolicyNames): Column<AuditListEntry>[] {
  const [event, ...rest] = entryColumns(policies);
  return [{ header: 'When', title: (e) => fmtDateTime(e.timestamp), cell: (e) => timeAgo(e.timestamp) }, event!, REQUEST_COLUMN, ...rest];
}

/** A time as a datetime-local input shows it (local time, to the minute). */
function localInput(ms: number): string {
  const at = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return at.toISOString().slice(0, 16);
}

/** Hands `content` to the browser as a downloaded file. */
function download(fileName: string, content: string): void {
  const url = URL.createObjectURL(new Blob([content], { type: 'application/jsonl' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * The evidence pack of a period (what `vigil evidence` writes), built by observe with the gate's
 * parts read through this session: one signed file an auditor checks with `vigil verify evidence`.
 */
function EvidencePackSection() {
  const [from, setFrom] = useState(() => localInput(Date.now() - 30 * 86_400_000));
  // The input shows minutes: the next minute's start, so that the default period holds everything up to now.
  const [to, setTo] = useState(() => localInput(Date.now() + 60_000));
  const [agent, setAgent] = useState('');
  const build = async () => {
    const pack = await observe('POST /api/audit/evidence-pack', {
      body: { from: new Date(from).toISOString(), to: new Date(to).toISOString(), agents: agent.trim() ? [agent.trim()] : [] },
      gateCredential: true,
    });
    download(pack.fileName, pack.content);
    return `Downloaded ${pack.fileName} (${pack.files} files). Check it with: vigil verify evidence ${pack.fileName} --public-key KEY`;
  };
  return (
    <Section title="Evidence pack">
      <CreateForm create={build} submit="Download evidence pack" pending="Building the pack…" failure="The evidence pack was not built" label="Evidence pack">
        <div className="form-grid">
          <Field label="From" htmlFor="evidence-from">
            <input required type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
          </Field>
          <Field label="To" htmlFor="evidence-to">
            <input required type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} />
          </Field>
          <Field label="Agent (optional)" htmlFor="evidence-agent" hint="Only this agent's oversight records, breaches and error sessions">
            <input value={agent} placeholder="every agent" onChange={(e) => setAgent(e.target.value)} />
          </Field>
        </div>
      </CreateForm>
    </Section>
  );
}

export function AuditPage() {
  const { query } = useLocation();
  // From the address: an unknown value is the gate's to refuse (400), shown as the page's error.
  const event = (query.get('event') ?? '') as NonNullable<GateQuery<'GET /api/audit'>['event']> | '';
  const actor = query.get('actor') ?? '';
  const action = query.get('action') ?? '';
  const [actionDraft, setActionDraft] = useState(action);
  // The cursors of the pages opened with "Older", for these filters; other filters start at the newest page.
  const filters = JSON.stringify([event, actor, action]);
  const [paging, setPaging] = useState<{ filters: string; cursors: string[] }>({ filters, cursors: [] });
  const cursors = paging.filters === filters ? paging.cursors : [];
  const cursor = cursors.at(-1);

  const entries = useAsync(
    (signal) => gate('GET /api/audit', { query: { event: event || undefined, actor, action, cursor, limit: PAGE_SIZE }, signal }),
    [event, actor, action, cursor],
    // The newest page follows new entries by itself; older pages stay put.
    { pollMs: cursor === undefined ? 5000 : undefined },
  );
  const actors = useAsync((signal) => gate('GET /api/audit/actors', { signal }), []);
  const policies = usePolicyNames();

  return (
    <Page title="Audit log" subtitle="Every recorded step of every approval request, newest first: who acted, and the API key behind them.">
      <Section title="Filters">
        <Filters
          onApply={() => setQuery({ action: actionDraft.trim() || null })}
          onClear={() => {
            setActionDraft('');
            setQuery({ event: null, actor: null, action: null });
          }}
          filtered={Boolean(event || actor || action)}
        >
          <div className="field">
            <label htmlFor="audit-event">Event</label>
            <select id="audit-event" value={event} onChange={(e) => setQuery({ event: e.target.value || null })}>
              <option value="">Any event</option>
              {EVENTS.map((name) => (
                <option key={name} value={name}>
                  {name.replaceAll('_', ' ')}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="audit-actor">Actor</label>
            <select id="audit-actor" value={actor} onChange={(e) => setQuery({ actor: e.target.value || null })}>
              <option value="">Anyone</option>
              {actors.data?.actors.map((name) => (
                <option key={name} value={name}>
                  {fmtActor(name, undefined, policies)}
                </option>
              ))}
              {actor && !actors.data?.actors.includes(actor) && <option value={actor}>{fmtActor(actor, undefined, policies)}</option>}
            </select>
          </div>
          <div className="field">
            <label htmlFor="audit-action">Request action</label>
            <input id="audit-action" value={actionDraft} placeholder="deploy" onChange={(e) => setActionDraft(e.target.value)} />
          </div>
        </Filters>
      </Section>
      <Section title="Entries" actions={entries.refreshing ? <span className="muted small">refreshing…</span> : null}>
        <Async
          state={entries}
          label="Loading the audit log…"
          isEmpty={(d) => d.entries.length === 0}
          empty={event || actor || action ? 'No audit entry matches these filters.' : 'No audit entries yet: they appear when agents ask for approval.'}
        >
          {(data) => (
            <>
              <Table rows={data.entries} columns={logColumns(policies)} rowKey={(e) => e.id} testId="audit-log" />
              <CursorPager
                label="Audit log pages"
                newer={cursors.length > 0 ? () => setPaging({ filters, cursors: cursors.slice(0, -1) }) : undefined}
                older={data.nextCursor !== null ? () => setPaging({ filters, cursors: [...cursors, data.nextCursor!] }) : undefined}
              />
            </>
          )}
        </Async>
      </Section>
      <EvidencePackSection />
    </Page>
  );
}
