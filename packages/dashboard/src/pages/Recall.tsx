import { useState, type FormEvent } from 'react';
import { observe, type ObserveQuery } from '../api.ts';
import { EventTypeBadge } from '../events.tsx';
import { fmtDateTime, fmtNumber, fmtScore, plural, timeAgo } from '../format.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Badge, Empty, Meter, Page, Section, useAsync } from '../ui.tsx';

export function RecallPage() {
  const { query } = useLocation();
  const q = query.get('q') ?? '';
  // From the address: an unknown scope is observe's to refuse (400), shown as the page's error.
  const scope = (query.get('scope') ?? 'all') as NonNullable<ObserveQuery<'GET /api/recall'>['scope']>;
  const [draft, setDraft] = useState(q);
  const [scopeDraft, setScopeDraft] = useState(scope);
  const status = useAsync((signal) => observe('GET /api/recall/status', { signal }), [], { pollMs: 10_000 });
  const results = useAsync((signal) => (q ? observe('GET /api/recall', { query: { query: q, scope, limit: 25 }, signal }) : Promise.resolve(null)), [q, scope]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setQuery({ q: draft.trim() || null, scope: scopeDraft === 'all' ? null : scopeDraft });
  };

  return (
    <Page title="Recall search" subtitle="Semantic search over what agents did: tool calls, model answers, errors, and one summary per session.">
      <Section title="Search">
        <form className="filters" onSubmit={submit} role="search">
          <div className="field grow">
            <label htmlFor="recall-query">Search for</label>
            <input
              id="recall-query"
              type="search"
              value={draft}
              maxLength={2000}
              placeholder="e.g. card declined during checkout"
              onChange={(e) => setDraft(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor="recall-scope">In</label>
            <select id="recall-scope" value={scopeDraft} onChange={(e) => setScopeDraft(e.target.value as typeof scope)}>
              <option value="all">Events and sessions</option>
              <option value="events">Events only</option>
              <option value="sessions">Sessions only</option>
            </select>
          </div>
          <button type="submit">Search</button>
        </form>
        {status.data && (
          <p className="muted small">
            {fmtNumber(status.data.vectors.stored)} texts indexed with {status.data.embedder.model} ({status.data.embedder.backend}).{' '}
            {status.data.queue.depth > 0 ? `${fmtNumber(status.data.queue.depth)} recent items are still being indexed.` : 'Everything ingested is searchable.'}
          </p>
        )}
      </Section>
      {q && (
        <Section title="Results">
          <Async state={results} label="Searching…" isEmpty={(d) => d === null || d.results.length === 0} empty={`Nothing similar to “${q}” was found.`}>
            {(data) =>
              data && (
                <>
                  <p className="muted" aria-live="polite">
                    {plural(data.totalResults, 'match', 'matches')}; the best {data.results.length} are shown.
                  </p>
                  <ol className="results">
                    {data.results.map((r) => {
                      const sessionId = typeof r.metadata.sessionId === 'string' ? r.metadata.sessionId : null;
                      const timestamp =
                        typeof r.metadata.timestamp === 'string'
                          ? r.metadata.timestamp
                          : typeof r.metadata.startedAt === 'string'
                            ? r.metadata.startedAt
                            : null;
                      return (
                        <li key={`${r.sourceType}-${r.sourceId}`}>
                          <div className="result-head">
                            <span className="score">
                              <Meter value={r.score} max={1} label="Similarity" /> {fmtScore(r.score)}
                            </span>
                            {r.sourceType === 'session' ? (
                              <Badge tone="info">session</Badge>
                            ) : (
                              <EventTypeBadge type={String(r.metadata.eventType ?? 'event')} />
                            )}
                            {sessionId && <Link to={`/sessions/${encodeURIComponent(sessionId)}`}>{sessionId}</Link>}
                            {typeof r.metadata.agentId === 'string' && <span className="muted">{r.metadata.agentId}</span>}
                            {timestamp && (
                              <span className="muted" title={fmtDateTime(timestamp)}>
                                {timeAgo(timestamp)}
                              </span>
                            )}
                          </div>
                          <p className="result-text">{r.text}</p>
                        </li>
                      );
                    })}
                  </ol>
                </>
              )
            }
          </Async>
        </Section>
      )}
      {!q && (
        <Section title="Results">
          <Empty>Type what you are looking for: words do not have to match exactly.</Empty>
        </Section>
      )}
    </Page>
  );
}
