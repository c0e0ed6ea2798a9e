import { memo, useEffect, useEffectEvent, useMemo, useRef, useState } from 'react';
import { observe, type Verification, type VigilEvent } from '../api.ts';
import { InlineSelect } from '../components.tsx';
import { EventTypeBadge, SeverityBadge, summarize } from '../events.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtScore, fmtTime, fmtUsd, plural, shortHash, timeAgo } from '../format.ts';
import { useLiveStream, useThrottled } from '../live.ts';
import { Link } from '../router.tsx';
import { TraceTree } from '../trace-tree.tsx';
import { VirtualList, type VirtualListHandle } from '../virtual-list.tsx';
import { Async, Badge, ErrorMessage, JsonView, Notice, Page, Section, Stat, Stats, StatusBadge, useAction, useAsync, useFormAction } from '../ui.tsx';

export function ChainStatus({ verification, onVerify, verifying }: { verification: Verification; onVerify?: () => void; verifying?: boolean }) {
  const broken = verification.brokenAt;
  return (
    <div className={`chain ${verification.valid ? 'chain-valid' : 'chain-broken'}`} role="status" aria-live="polite" data-testid="chain-status">
      <div>
        {verification.valid ? (
          <>
            <strong>Hash chain valid.</strong> All {fmtNumber(verification.eventCount)} events verified; head <code>{shortHash(verification.headHash)}</code>.
          </>
        ) : (
          <>
            <strong>Hash chain broken at step {broken ? broken.seq : '?'}.</strong> {broken?.reason ?? 'The stored events no longer match their hashes.'}
            {broken?.eventId && (
              <>
                {' '}
                <a href={`#event-${broken.eventId}`}>Go to the event</a>.
              </>
            )}{' '}
            Someone or something changed, removed or reordered stored events after they were recorded.
          </>
        )}
      </div>
      {onVerify && (
        <button type="button" className="secondary small" onClick={onVerify} disabled={verifying}>
          {verifying ? 'Verifying…' : 'Verify again'}
        </button>
      )}
    </div>
  );
}

/**
 * The session's audit bundle (GET /api/audit/export) as a file, for `vigil verify` offline: its
 * events in canonical form, inclusion proofs and the signed checkpoint they lead to.
 */
function AuditBundleDownload({ sessionId, verification }: { sessionId: string; verification: Verification }) {
  const download = useAction(async () => {
    const bundle = await observe('GET /api/audit/export', { query: { sessionId } });
    const url = URL.createObjectURL(new Blob([JSON.stringify(bundle, null, 2)], { type: 'application/json' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = `${sessionId}.audit-bundle.json`;
    link.click();
    URL.revokeObjectURL(url);
  });
  return (
    <div className="audit-bundle" data-testid="audit-bundle">
      <button type="button" className="secondary small" onClick={() => void download.run()} disabled={download.pending}>
        {download.pending ? 'Exporting…' : 'Download audit bundle'}
      </button>{' '}
      <span className="muted">
        {verification.valid ? 'Chain valid here' : 'Chain broken here'}; check the file anywhere with{' '}
        <code>vigil verify {sessionId}.audit-bundle.json --public-key KEY</code> (the audit key you saved, or <code>--checkpoint</code> a checkpoint you saved)
      </span>
      {download.error && <ErrorMessage error={download.error} />}
    </div>
  );
}

function EvalCard({ event }: { event: VigilEvent }) {
  const p = event.payload as {
    method?: string;
    score?: number;
    passed?: boolean;
    reasoning?: string;
    violations?: { ruleId: string; ruleType?: string; detail?: string }[];
    judgeModel?: string;
    costUsd?: number;
  };
  const judge = p.method === 'llm_judge';
  return (
    <article className="eval" aria-label={`Evaluation at ${fmtDateTime(event.timestamp)}`}>
      <header>
        <Badge tone={p.passed ? 'good' : 'bad'}>{p.passed ? 'passed' : 'failed'}</Badge>{' '}
        <strong>{judge ? 'AI judgment' : 'Deterministic compliance check'}</strong>
        <span className="muted">
          {' '}
          · score {typeof p.score === 'number' ? fmtScore(p.score) : '—'} · step {event.seq} · {fmtDateTime(event.timestamp)}
        </span>
      </header>
      {judge && (
        <p className="muted">
          Judged by {p.judgeModel ?? 'a model'} ({fmtUsd(p.costUsd)}, not part of the session’s spend). A model’s judgment can differ between runs.
        </p>
      )}
      {p.reasoning && <p>{p.reasoning}</p>}
      {p.violations && p.violations.length > 0 && (
        <ul>
          {p.violations.map((v, i) => (
            <li key={i}>
              <code>{v.ruleId}</code> {v.ruleType && <span className="muted">({v.ruleType})</span>} {v.detail}
            </li>
          ))}
        </ul>
      )}
    </article>
  );
}

function RunEvaluator({ sessionId, onDone }: { sessionId: string; onDone: () => void }) {
  const evaluators = useAsync((signal) => observe('GET /api/evaluators', { signal }), []);
  const [chosen, setChosen] = useState('');
  const action = useFormAction(async (id: string) => {
    const evaluator = evaluators.data?.evaluators.find((e) => e.id === id);
    if (!evaluator) throw new Error('Choose an evaluator first.');
    const options = { params: { sessionId }, body: { evaluatorId: id } };
    const result =
      evaluator.kind === 'llm_judge'
        ? await observe('POST /api/eval/sessions/{sessionId}/score', options)
        : await observe('POST /api/eval/sessions/{sessionId}/compliance', options);
    onDone();
    return `${evaluator.name}: ${result.passed ? 'passed' : 'failed'} (score ${fmtScore(result.score)}). The verdict is chained into the session.`;
  });
  if (evaluators.data && evaluators.data.evaluators.length === 0) {
    return (
      <p className="muted">
        No saved evaluators yet. <Link to="/evaluators">Create one</Link> to run it on sessions from here.
      </p>
    );
  }
  return (
    <form
      className="filters"
      onSubmit={(e) => {
        e.preventDefault();
        action.start(chosen);
      }}
    >
      <div className="field">
        <label htmlFor="run-evaluator">Saved evaluator</label>
        <select id="run-evaluator" value={chosen} onChange={(e) => setChosen(e.target.value)}>
          <option value="">Choose…</option>
          {evaluators.data?.evaluators.map((e) => (
            <option key={e.id} value={e.id}>
              {e.name} ({e.kind === 'llm_judge' ? 'AI judge' : 'rules'})
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="secondary" disabled={!chosen || action.pending}>
        {action.pending ? 'Evaluating…' : 'Evaluate this session'}
      </button>
      {action.error && <ErrorMessage error={action.error} title="Evaluation failed" />}
      {action.done && <Notice>{action.done}</Notice>}
    </form>
  );
}

const eventKey = (event: VigilEvent): string => event.id;

/** Scrolls the timeline to the event the URL's #event-<id> names, if it is shown. */
async function goToHashedEvent(shown: readonly VigilEvent[], list: VirtualListHandle | null): Promise<void> {
  const match = /^#event-(.+)$/.exec(window.location.hash);
  const index = match ? shown.findIndex((e) => e.id === decodeURIComponent(match[1]!)) : -1;
  if (index === -1 || !list) return;
  (await list.scrollToIndex(index))?.scrollIntoView({ block: 'nearest' });
}

/**
 * One event of the timeline. Memoised, and its payload rendered only once opened: a scroll step of a
 * long timeline then renders the few rows it brings into view, not every row near it again.
 */
const TimelineRow = memo(function TimelineRow({ event: e, broken }: { event: VigilEvent; broken: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <li id={`event-${e.id}`} className={broken ? 'broken' : undefined} data-testid="timeline-event">
      <details onToggle={(t) => setOpen(t.currentTarget.open)}>
        <summary>
          <span className="seq" title="Step in the hash chain">
            #{e.seq}
          </span>
          <time dateTime={e.timestamp} title={fmtDateTime(e.timestamp)}>
            {fmtTime(e.timestamp)}
          </time>
          <EventTypeBadge type={e.eventType} />
          <SeverityBadge severity={e.severity} />
          <span className="summary-text">{summarize(e.eventType, e.payload)}</span>
          {broken && <Badge tone="bad">chain broken here</Badge>}
        </summary>
        {open && (
          <div className="event-detail">
            <JsonView value={e.payload} label={`Payload of event ${e.seq}`} />
            {Object.keys(e.metadata).length > 0 && <JsonView value={e.metadata} label={`Metadata of event ${e.seq}`} />}
            <p className="muted hashes">
              id <code>{e.id}</code> · hash <code>{shortHash(e.hash)}</code> · previous <code>{shortHash(e.prevHash)}</code>
            </p>
          </div>
        )}
      </details>
    </li>
  );
});

/** Events shown from one page of GET /api/events while the whole timeline (which verifies the chain) loads. */
const FIRST_EVENTS = 100;

export function SessionDetailPage({ id }: { id: string }) {
  // Asked first, so its answer comes first: a cheap indexed page, not the whole session.
  const firstEvents = useAsync((signal) => observe('GET /api/events', { query: { sessionId: id, order: 'asc', limit: FIRST_EVENTS }, signal }), [id]);
  const session = useAsync((signal) => observe('GET /api/sessions/{id}', { params: { id }, signal }), [id]);
  const timeline = useAsync((signal) => observe('GET /api/sessions/{id}/timeline', { params: { id }, signal }), [id]);
  const tree = useAsync((signal) => observe('GET /api/sessions/{id}/tree', { params: { id }, signal }), [id]);
  // Also polled: a stored event altered behind the service's back shows without any new event.
  const verification = useAsync((signal) => observe('GET /api/audit/verify', { query: { sessionId: id }, signal }), [id], { pollMs: 15_000 });
  const [typeFilter, setTypeFilter] = useState('');
  // The session's first events until its whole timeline is there.
  const firstOnly = timeline.data === undefined && timeline.error === undefined ? firstEvents.data : undefined;
  const events = timeline.data?.events ?? firstOnly?.events;
  const shown = useMemo(() => (typeFilter ? events?.filter((e) => e.eventType === typeFilter) : events) ?? [], [events, typeFilter]);
  const eventTypes = useMemo(() => [...new Set(events?.map((e) => e.eventType) ?? [])].sort(), [events]);
  const timelineHandle = useRef<VirtualListHandle>(null);
  // A link to #event-<id> (the trace tree's names, the chain break): a long timeline renders only
  // the rows near its visible part, so the row is scrolled into its list first; so is the event
  // the page was opened at, once the timeline is there.
  const timelineLoaded = timeline.data !== undefined;
  const go = useEffectEvent(() => void goToHashedEvent(shown, timelineHandle.current));
  useEffect(() => {
    if (timelineLoaded) go();
    window.addEventListener('hashchange', go);
    return () => window.removeEventListener('hashchange', go);
  }, [timelineLoaded]);

  const reloadAll = () => {
    session.reload();
    timeline.reload();
    tree.reload();
    verification.reload();
  };
  const reverify = useThrottled(verification.reload, 5000);
  // A new event may close a call or add a span anywhere in the tree: it is asked again, at most every 2 s.
  const rebuildTree = useThrottled(tree.reload, 2000);
  useLiveStream(
    { sessionId: id },
    {
      onSession: (changed) => session.update(() => changed),
      onEvent: (event) => {
        // Timeline order: timestamp, then seq; an event already loaded is not added twice.
        timeline.update((t) =>
          t.events.some((e) => e.id === event.id)
            ? t
            : { ...t, events: [...t.events, event].sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.seq - b.seq) },
        );
        reverify();
        rebuildTree();
      },
      onReset: reloadAll,
    },
  );

  const broken = verification.data?.brokenAt ?? null;
  const timelineList = (
    <VirtualList
      as="ol"
      label="Events in time order"
      className="timeline"
      items={shown}
      itemKey={eventKey}
      estimate={37}
      handle={timelineHandle}
      renderItem={(e) => (
        <TimelineRow key={e.id} event={e} broken={broken !== null && (broken.eventId === e.id || (broken.eventId === null && broken.seq === e.seq))} />
      )}
    />
  );

  return (
    <Page
      title={`Session ${id}`}
      subtitle={<Link to="/sessions">← All sessions</Link>}
      actions={
        <>
          <Link to={`/compare?a=${encodeURIComponent(id)}`} className="button secondary">
            Compare with…
          </Link>
          <Link to={`/sessions/${encodeURIComponent(id)}/replay`} className="button">
            Replay step by step
          </Link>
        </>
      }
    >
      <Async state={session} label="Loading the session…">
        {(s) => (
          <Stats>
            <Stat label="Status" value={<StatusBadge status={s.status} />} />
            <Stat
              label="Agent"
              value={<Link to={`/agents/${encodeURIComponent(s.agentId)}`}>{s.agentName}</Link>}
              hint={s.agentName !== s.agentId ? s.agentId : undefined}
            />
            <Stat label="Started" value={timeAgo(s.startedAt)} hint={fmtDateTime(s.startedAt)} />
            <Stat label="Duration" value={fmtDuration(s.durationMs)} hint={s.endedAt ? 'ended' : 'still active'} />
            <Stat label="Events" value={fmtNumber(s.eventCount)} hint={plural(s.toolCallCount, 'tool call')} />
            <Stat label="Errors" value={fmtNumber(s.errorCount)} />
            <Stat label="Cost" value={fmtUsd(s.totalCostUsd)} />
            <Stat label="Tags" value={s.tags.length ? s.tags.join(', ') : '—'} />
          </Stats>
        )}
      </Async>

      <Section title="Tamper evidence">
        <Async state={verification} label="Verifying the hash chain…">
          {(v) => (
            <>
              <ChainStatus verification={v} onVerify={verification.reload} verifying={verification.refreshing} />
              <AuditBundleDownload sessionId={id} verification={v} />
            </>
          )}
        </Async>
      </Section>

      <Section title="Evaluations">
        <Async state={timeline}>
          {(t) => {
            const evals = t.events.filter((e) => e.eventType === 'eval_result');
            return evals.length === 0 ? (
              <p className="empty">No evaluation of this session yet.</p>
            ) : (
              <div className="evals">
                {evals.map((e) => (
                  <EvalCard key={e.id} event={e} />
                ))}
              </div>
            );
          }}
        </Async>
        <RunEvaluator sessionId={id} onDone={reloadAll} />
      </Section>

      <Section title="Trace tree">
        <Async state={tree} label="Building the trace tree…" isEmpty={(t) => t.roots.length === 0} empty="This session has no events.">
          {(t) => <TraceTree tree={t} />}
        </Async>
      </Section>

      <Section
        title="Timeline"
        actions={
          <InlineSelect
            id="timeline-type"
            label="Show"
            value={typeFilter}
            options={[{ value: '', label: 'All events' }, ...eventTypes.map((type) => ({ value: type, label: type }))]}
            onChange={setTypeFilter}
          />
        }
      >
        {firstOnly && firstOnly.events.length > 0 ? (
          <>
            <p className="muted small" role="status">
              The first {plural(firstOnly.events.length, 'event')} of {fmtNumber(firstOnly.total)}; loading the rest and checking the chain…
            </p>
            {timelineList}
          </>
        ) : (
          <Async state={timeline} label="Loading the timeline…" isEmpty={(t) => t.events.length === 0} empty="This session has no events.">
            {() => timelineList}
          </Async>
        )}
      </Section>
    </Page>
  );
}
