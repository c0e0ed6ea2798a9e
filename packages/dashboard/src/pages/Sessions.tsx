import { useState } from 'react';
import { observe, type ObserveAnswer } from '../api.ts';
import { AsyncTable, Filters, type Column } from '../components.tsx';
import { useCompareSelection } from '../compare-select.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtUsd, plural, timeAgo } from '../format.ts';
import { useLiveStream, useThrottled } from '../live.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Badge, Page, Pager, Section, StatusBadge, useAsync } from '../ui.tsx';

const PAGE_SIZE = 25;
/** A search reads at most this many of the newest matching events (GET /api/events' limit) and as many sessions. */
const SEARCH_LIMIT = 500;

/** A day picked in a date input, as the ISO time its local start (or end) is. */
function dayBound(day: string, end: boolean): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const time = new Date(`${day}T${end ? '23:59:59.999' : '00:00:00'}`);
  return Number.isNaN(time.getTime()) ? undefined : time.toISOString();
}

type SessionList = ObserveAnswer<'GET /api/sessions'> & { searchCut?: boolean };

const SESSION_COLUMNS: Column<SessionList['sessions'][number]>[] = [
  { header: 'Session', cell: (s) => <Link to={`/sessions/${encodeURIComponent(s.id)}`}>{s.id}</Link> },
  { header: 'Agent', cell: (s) => s.agentName },
  { header: 'Status', cell: (s) => <StatusBadge status={s.status} /> },
  { header: 'Started', title: (s) => fmtDateTime(s.startedAt), cell: (s) => timeAgo(s.startedAt) },
  { header: 'Duration', num: true, cell: (s) => fmtDuration(s.durationMs) },
  { header: 'Events', num: true, cell: (s) => fmtNumber(s.eventCount) },
  { header: 'Errors', num: true, cell: (s) => (s.errorCount > 0 ? <Badge tone="bad">{fmtNumber(s.errorCount)}</Badge> : 0) },
  { header: 'Cost', num: true, cell: (s) => fmtUsd(s.totalCostUsd) },
  {
    header: 'Tags',
    cell: (s) =>
      s.tags.map((t) => (
        <button key={t} type="button" className="tag" title={`Show sessions tagged ${t}`} onClick={() => setQuery({ tags: t, offset: null })}>
          {t}
        </button>
      )),
  },
];

/**
 * Sessions by the URL's filters. With a search text: the sessions whose events mention it (the
 * events' full-text search), among the sessions the other filters select, newest first.
 */
async function loadSessions(
  filters: { q: string; status: string; agentId: string; tags: string; from?: string; to?: string; offset: number },
  signal: AbortSignal,
): Promise<SessionList> {
  const { q, offset, ...rest } = filters;
  if (!q) return observe('GET /api/sessions', { query: { ...rest, limit: PAGE_SIZE, offset }, signal });
  const [events, candidates] = await Promise.all([
    observe('GET /api/events', { query: { search: q, agentId: rest.agentId, from: rest.from, limit: SEARCH_LIMIT }, signal }),
    observe('GET /api/sessions', { query: { ...rest, limit: SEARCH_LIMIT }, signal }),
  ]);
  const mentioned = new Set(events.events.map((e) => e.sessionId));
  const matching = candidates.sessions.filter((session) => mentioned.has(session.id));
  return {
    sessions: matching.slice(offset, offset + PAGE_SIZE),
    total: matching.length,
    hasMore: offset + PAGE_SIZE < matching.length,
    searchCut: events.hasMore || candidates.hasMore,
  };
}

export function SessionsPage() {
  const { query } = useLocation();
  const q = query.get('q') ?? '';
  const status = query.get('status') ?? '';
  const agentId = query.get('agent') ?? '';
  const tags = query.get('tags') ?? '';
  const fromDay = query.get('from') ?? '';
  const toDay = query.get('to') ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [live, setLive] = useState(true);
  const inUrl = { q, tags, from: fromDay, to: toDay };
  const [drafts, setDrafts] = useState(inUrl);
  // Back and forward change the URL under the form: its fields follow (set while rendering, as
  // React advises for state that follows a prop, instead of an effect's second render).
  const inUrlKey = JSON.stringify(inUrl);
  const [draftsFrom, setDraftsFrom] = useState(inUrlKey);
  if (draftsFrom !== inUrlKey) {
    setDraftsFrom(inUrlKey);
    setDrafts(inUrl);
  }
  const draft = (name: keyof typeof drafts) => (value: string) => setDrafts((d) => ({ ...d, [name]: value }));
  const filtered = Boolean(q || status || agentId || tags || fromDay || toDay);

  const sessions = useAsync(
    (signal) => loadSessions({ q, status, agentId, tags, from: dayBound(fromDay, false), to: dayBound(toDay, true), offset }, signal),
    [q, status, agentId, tags, fromDay, toDay, offset],
  );
  // Live: a session on this page changes in place; any other change reloads the page (at most once a second).
  const reloadSessions = useThrottled(sessions.reload, 1000);
  useLiveStream(
    { agentId, include: 'sessions' },
    {
      onSession: (changed) => {
        const shown = sessions.data?.sessions.some((s) => s.id === changed.id) ?? false;
        if (shown && (!status || status.split(',').includes(changed.status))) {
          sessions.update((data) => ({ ...data, sessions: data.sessions.map((s) => (s.id === changed.id ? changed : s)) }));
        } else if (shown || offset === 0) {
          reloadSessions();
        }
      },
      onReset: sessions.reload,
    },
    live,
  );
  const agents = useAsync((signal) => observe('GET /api/agents', { signal }), []);
  const compare = useCompareSelection();

  const apply = () => {
    setQuery({ q: drafts.q.trim() || null, tags: drafts.tags.trim() || null, from: drafts.from || null, to: drafts.to || null, offset: null });
  };
  const clear = () => {
    setDrafts({ q: '', tags: '', from: '', to: '' });
    setQuery({ q: null, status: null, agent: null, tags: null, from: null, to: null, offset: null });
  };

  return (
    <Page title="Sessions" subtitle="Every run of every agent, newest first. Open one for its timeline, hash-chain check and replay.">
      <Section
        title="Filters"
        actions={
          <label className="checkbox">
            <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> Live updates
          </label>
        }
      >
        <Filters onApply={apply} onClear={clear} filtered={filtered}>
          <div className="field">
            <label htmlFor="sessions-search">Search (text in their events)</label>
            <input
              id="sessions-search"
              type="search"
              value={drafts.q}
              maxLength={500}
              placeholder="refund, timeout, order 1234"
              onChange={(e) => draft('q')(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor="sessions-status">Status</label>
            <select id="sessions-status" value={status} onChange={(e) => setQuery({ status: e.target.value || null, offset: null })}>
              <option value="">Any status</option>
              <option value="active">Active</option>
              <option value="completed">Completed</option>
              <option value="error">Error</option>
            </select>
          </div>
          <div className="field">
            <label htmlFor="sessions-agent">Agent</label>
            <select id="sessions-agent" value={agentId} onChange={(e) => setQuery({ agent: e.target.value || null, offset: null })}>
              <option value="">Any agent</option>
              {agents.data?.agents.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.name === a.id ? a.id : `${a.name} (${a.id})`}
                </option>
              ))}
              {agentId && !agents.data?.agents.some((a) => a.id === agentId) && <option value={agentId}>{agentId}</option>}
            </select>
          </div>
          <div className="field">
            <label htmlFor="sessions-tags">Tags (all of, comma-separated)</label>
            <input id="sessions-tags" value={drafts.tags} placeholder="prod, variant-a" onChange={(e) => draft('tags')(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="sessions-from">Started from</label>
            <input id="sessions-from" type="date" value={drafts.from} max={drafts.to || undefined} onChange={(e) => draft('from')(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="sessions-to">Started until</label>
            <input id="sessions-to" type="date" value={drafts.to} min={drafts.from || undefined} onChange={(e) => draft('to')(e.target.value)} />
          </div>
        </Filters>
      </Section>
      <Section
        title="Sessions"
        actions={
          <>
            {compare.action}
            {sessions.data && (
              <span className="muted" aria-live="polite">
                {plural(sessions.data.total, 'session')}
              </span>
            )}
          </>
        }
      >
        <AsyncTable
          state={sessions}
          rows={(d) => d.sessions}
          label="Loading sessions…"
          empty={
            filtered ? (
              'No session matches these filters.'
            ) : (
              <>
                No sessions yet. Send events with <code>POST /api/events</code>; new sessions appear here by themselves.
              </>
            )
          }
          columns={[...SESSION_COLUMNS, compare.column]}
          rowKey={(s) => s.id}
          after={(data) => (
            <>
              {data.searchCut && (
                <p className="muted small">
                  The search read the {fmtNumber(SEARCH_LIMIT)} newest matching events and sessions; narrow it with the filters to see older ones.
                </p>
              )}
              <Pager
                label="Sessions"
                offset={offset}
                limit={PAGE_SIZE}
                total={data.total}
                onChange={(next) => setQuery({ offset: next ? String(next) : null })}
              />
            </>
          )}
        />
      </Section>
    </Page>
  );
}
