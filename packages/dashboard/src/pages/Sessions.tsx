import { useState, type FormEvent } from 'react';
import { observe } from '../api.ts';
import { fmtDateTime, fmtDuration, fmtNumber, fmtUsd, timeAgo } from '../format.ts';
import { useLiveStream, useThrottled } from '../live.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Badge, Page, Pager, Section, StatusBadge, useAsync } from '../ui.tsx';

const PAGE_SIZE = 25;

export function SessionsPage() {
  const { query } = useLocation();
  const status = query.get('status') ?? '';
  const agentId = query.get('agent') ?? '';
  const tags = query.get('tags') ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [live, setLive] = useState(true);
  const [tagsDraft, setTagsDraft] = useState(tags);

  const sessions = useAsync(
    (signal) =>
      observe('GET /api/sessions', {
        query: { status, agentId, tags, limit: PAGE_SIZE, offset },
        signal,
      }),
    [status, agentId, tags, offset],
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

  const applyTags = (event: FormEvent) => {
    event.preventDefault();
    setQuery({ tags: tagsDraft.trim() || null, offset: null });
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
        <form className="filters" onSubmit={applyTags}>
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
            <input id="sessions-tags" value={tagsDraft} placeholder="prod, variant-a" onChange={(e) => setTagsDraft(e.target.value)} />
          </div>
          <button type="submit" className="secondary">
            Apply
          </button>
          {(status || agentId || tags) && (
            <button
              type="button"
              className="link"
              onClick={() => {
                setTagsDraft('');
                setQuery({ status: null, agent: null, tags: null, offset: null });
              }}
            >
              Clear filters
            </button>
          )}
        </form>
      </Section>
      <Section title="Sessions" actions={sessions.data && <span className="muted" aria-live="polite">{fmtNumber(sessions.data.total)} sessions</span>}>
        <Async
          state={sessions}
          label="Loading sessions…"
          isEmpty={(d) => d.sessions.length === 0}
          empty={
            status || agentId || tags ? (
              'No session matches these filters.'
            ) : (
              <>
                No sessions yet. Send events with <code>POST /api/events</code>; new sessions appear here by themselves.
              </>
            )
          }
        >
          {(data) => (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Session</th>
                    <th scope="col">Agent</th>
                    <th scope="col">Status</th>
                    <th scope="col">Started</th>
                    <th scope="col" className="num">Duration</th>
                    <th scope="col" className="num">Events</th>
                    <th scope="col" className="num">Errors</th>
                    <th scope="col" className="num">Cost</th>
                    <th scope="col">Tags</th>
                  </tr>
                </thead>
                <tbody>
                  {data.sessions.map((s) => (
                    <tr key={s.id}>
                      <td>
                        <Link to={`/sessions/${encodeURIComponent(s.id)}`}>{s.id}</Link>
                      </td>
                      <td>{s.agentName}</td>
                      <td>
                        <StatusBadge status={s.status} />
                      </td>
                      <td title={fmtDateTime(s.startedAt)}>{timeAgo(s.startedAt)}</td>
                      <td className="num">{fmtDuration(Date.parse(s.endedAt ?? s.lastEventAt) - Date.parse(s.startedAt))}</td>
                      <td className="num">{fmtNumber(s.eventCount)}</td>
                      <td className="num">{s.errorCount > 0 ? <Badge tone="bad">{fmtNumber(s.errorCount)}</Badge> : 0}</td>
                      <td className="num">{fmtUsd(s.totalCostUsd)}</td>
                      <td>
                        {s.tags.map((t) => (
                          <button key={t} type="button" className="tag" title={`Show sessions tagged ${t}`} onClick={() => { setTagsDraft(t); setQuery({ tags: t, offset: null }); }}>
                            {t}
                          </button>
                        ))}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager label="Sessions" offset={offset} limit={PAGE_SIZE} total={data.total} onChange={(next) => setQuery({ offset: next ? String(next) : null })} />
            </>
          )}
        </Async>
      </Section>
    </Page>
  );
}
