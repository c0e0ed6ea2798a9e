import { useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { observe, type ObserveAnswer, type Session } from '../api.ts';
import { ALIGN_MAX_EDITS, ALIGN_MAX_EVENTS, alignEvents, alignmentCounts, pairDiff, stepKey, totalsOf, type AlignedRow } from '../compare.ts';
import { InlineSelect, TableScroll } from '../components.tsx';
import { EventTypeBadge } from '../events.tsx';
import { fmtCountChange, fmtDuration, fmtDurationChange, fmtNumber, fmtUsd, fmtUsdChange, plural } from '../format.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { Async, Badge, Page, Section, useAsync } from '../ui.tsx';

/** Rows of the aligned table drawn at once: a 10,000-event pair is read a window at a time. */
const WINDOW = 200;

type Step = ObserveAnswer<'GET /api/sessions/{id}/steps'>['steps'][number];
/** Steps asked per request: the largest page the API gives. */
const STEPS_PAGE = 5000;

interface Side {
  session: Session;
  /** The first ALIGN_MAX_EVENTS steps (the alignment reads no more). */
  steps: Step[];
}

async function loadSteps(id: string, signal: AbortSignal): Promise<Step[]> {
  const steps: Step[] = [];
  let after: number | null = -1;
  while (after !== null && steps.length < ALIGN_MAX_EVENTS) {
    const page: ObserveAnswer<'GET /api/sessions/{id}/steps'> = await observe('GET /api/sessions/{id}/steps', {
      params: { id },
      query: { after, limit: Math.min(STEPS_PAGE, ALIGN_MAX_EVENTS - steps.length) },
      signal,
    });
    steps.push(...page.steps);
    after = page.nextAfter;
  }
  return steps;
}

async function loadSide(id: string, signal: AbortSignal): Promise<Side> {
  const [session, steps] = await Promise.all([observe('GET /api/sessions/{id}', { params: { id }, signal }), loadSteps(id, signal)]);
  return { session, steps };
}

/** Two session ids typed or picked among the newest sessions; opens the comparison. */
function ChooseSessions({ a, b }: { a: string; b: string }) {
  const [first, setFirst] = useState(a);
  const [second, setSecond] = useState(b);
  const recent = useAsync((signal) => observe('GET /api/sessions', { query: { limit: 50 }, signal }), []);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(`/compare?a=${encodeURIComponent(first.trim())}&b=${encodeURIComponent(second.trim())}`);
  };
  return (
    <form className="filters" onSubmit={submit}>
      <div className="field">
        <label htmlFor="compare-a">Session A</label>
        <input id="compare-a" required list="compare-recent" value={first} onChange={(e) => setFirst(e.target.value)} />
      </div>
      <div className="field">
        <label htmlFor="compare-b">Session B</label>
        <input id="compare-b" required list="compare-recent" value={second} onChange={(e) => setSecond(e.target.value)} />
      </div>
      <datalist id="compare-recent">
        {recent.data?.sessions.map((s) => (
          <option key={s.id} value={s.id}>
            {s.agentName}
          </option>
        ))}
      </datalist>
      <button type="submit">Compare</button>
    </form>
  );
}

function Totals({ a, b }: { a: Side; b: Side }) {
  const ta = totalsOf(a.steps);
  const tb = totalsOf(b.steps);
  const rows: [figure: string, a: string, b: string, diff: string][] = [
    ['Duration', fmtDuration(a.session.durationMs), fmtDuration(b.session.durationMs), fmtDurationChange(b.session.durationMs - a.session.durationMs)],
    ['Cost', fmtUsd(a.session.totalCostUsd), fmtUsd(b.session.totalCostUsd), fmtUsdChange(b.session.totalCostUsd - a.session.totalCostUsd)],
    ['Tokens', fmtNumber(ta.tokens), fmtNumber(tb.tokens), fmtCountChange(tb.tokens - ta.tokens)],
    ['Events', fmtNumber(a.session.eventCount), fmtNumber(b.session.eventCount), fmtCountChange(b.session.eventCount - a.session.eventCount)],
    ['Tool calls', fmtNumber(a.session.toolCallCount), fmtNumber(b.session.toolCallCount), fmtCountChange(b.session.toolCallCount - a.session.toolCallCount)],
    ['Errors', fmtNumber(a.session.errorCount), fmtNumber(b.session.errorCount), fmtCountChange(b.session.errorCount - a.session.errorCount)],
    ['Time in LLM calls and tools', fmtDuration(ta.latency), fmtDuration(tb.latency), fmtDurationChange(tb.latency - ta.latency)],
  ];
  return (
    <TableScroll>
      <table data-testid="compare-totals">
        <caption className="visually-hidden">Totals of sessions A and B, and B minus A</caption>
        <thead>
          <tr>
            <th scope="col">Figure</th>
            <th scope="col" className="num">
              A
            </th>
            <th scope="col" className="num">
              B
            </th>
            <th scope="col" className="num">
              B − A
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([figure, va, vb, diff]) => (
            <tr key={figure}>
              <th scope="row">{figure}</th>
              <td className="num">{va}</td>
              <td className="num">{vb}</td>
              <td className="num">{diff}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

function StepCell({ step, missing }: { step: Step | null; missing: string }): ReactNode {
  if (!step) return <span className="muted">{missing}</span>;
  const figures = [
    step.toolName ?? step.model,
    step.costUsd === null ? null : fmtUsd(step.costUsd),
    step.latencyMs === null ? null : fmtDuration(step.latencyMs),
  ];
  return (
    <>
      <span className="seq">#{step.seq}</span> <EventTypeBadge type={step.eventType} /> {figures.filter(Boolean).join(' · ')}
      {step.isError && (
        <>
          {' '}
          <Badge tone="bad">error</Badge>
        </>
      )}
    </>
  );
}

type Show = 'all' | 'differences';

/** A gap, or a pair whose cost or latency differs. */
function differs(row: AlignedRow<Step>): boolean {
  if (!row.a || !row.b) return true;
  const diff = pairDiff(row);
  return Boolean(diff.cost || diff.latency);
}

function AlignedEvents({ a, b }: { a: Side; b: Side }) {
  // The alignment is computed once per pair; the window and the filter only pick rows of it.
  const alignment = useMemo(() => alignEvents(a.steps, b.steps, stepKey), [a.steps, b.steps]);
  const counts = alignmentCounts(alignment.rows);
  // Events past the cap were not fetched (loadSide) or not aligned (alignEvents).
  const cutA = a.session.eventCount - a.steps.length + alignment.cutA;
  const cutB = b.session.eventCount - b.steps.length + alignment.cutB;
  const [show, setShow] = useState<Show>('all');
  const [start, setStart] = useState(0);
  const rows = useMemo(() => (show === 'all' ? alignment.rows : alignment.rows.filter(differs)), [alignment, show]);
  const end = Math.min(start + WINDOW, rows.length);
  const kind = (row: AlignedRow<Step>) => (row.a && row.b ? 'both' : row.a ? 'only-a' : 'only-b');
  return (
    <>
      <p data-testid="alignment-counts">
        {plural(counts.matched, 'step')} in both, {plural(counts.removed, 'step')} only in A, {plural(counts.added, 'step')} only in B.
      </p>
      {(cutA > 0 || cutB > 0) && (
        <p className="muted small" role="note">
          Only the first {fmtNumber(ALIGN_MAX_EVENTS)} events of each session are aligned ({plural(cutA, 'event')} of A and {plural(cutB, 'event')} of B are
          left out, here and from the tokens and time totals above).
        </p>
      )}
      {!alignment.exact && (
        <p className="muted small" role="note">
          The sessions differ in more than {fmtNumber(ALIGN_MAX_EDITS)} places: past their common start and end, their events are paired by position, not by the
          shortest difference.
        </p>
      )}
      <div className="row">
        <InlineSelect<Show>
          id="compare-show"
          label="Show"
          value={show}
          options={[
            { value: 'all', label: 'Every step' },
            { value: 'differences', label: 'Only differences' },
          ]}
          onChange={(next) => {
            setShow(next);
            setStart(0);
          }}
        />
      </div>
      <TableScroll>
        <table className="compare-table" data-testid="aligned-events">
          <caption className="visually-hidden">Events of sessions A and B aligned step by step; differences are B minus A</caption>
          <thead>
            <tr>
              <th scope="col">Session A</th>
              <th scope="col">Session B</th>
              <th scope="col" className="num">
                Cost B − A
              </th>
              <th scope="col" className="num">
                Latency B − A
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.slice(start, end).map((row, i) => {
              const diff = pairDiff(row);
              return (
                <tr key={start + i} className={`aligned-${kind(row)}`} data-kind={kind(row)}>
                  <td>
                    <StepCell step={row.a} missing="not in A" />
                  </td>
                  <td>
                    <StepCell step={row.b} missing="not in B" />
                  </td>
                  <td className="num">{diff.cost === null ? '' : fmtUsdChange(diff.cost)}</td>
                  <td className="num">{diff.latency === null ? '' : fmtDurationChange(diff.latency)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </TableScroll>
      {rows.length > WINDOW && (
        <nav className="pager" aria-label="Aligned steps pages">
          <button type="button" className="secondary small" disabled={start === 0} onClick={() => setStart(Math.max(0, start - WINDOW))}>
            ← Earlier steps
          </button>
          <span>
            {fmtNumber(start + 1)}–{fmtNumber(end)} of {fmtNumber(rows.length)}
          </span>
          <button type="button" className="secondary small" disabled={end >= rows.length} onClick={() => setStart(start + WINDOW)}>
            Later steps →
          </button>
        </nav>
      )}
    </>
  );
}

export function ComparePage() {
  const { query } = useLocation();
  const a = query.get('a') ?? '';
  const b = query.get('b') ?? '';
  const sides = useAsync((signal) => (a && b ? Promise.all([loadSide(a, signal), loadSide(b, signal)]) : Promise.resolve(null)), [a, b]);
  return (
    <Page title="Compare sessions" subtitle={<Link to="/sessions">← All sessions</Link>}>
      <Section title="Sessions">
        <ChooseSessions key={`${a}\n${b}`} a={a} b={b} />
      </Section>
      {a && b && (
        <Async state={sides} label="Loading both sessions…">
          {(loaded) =>
            loaded && (
              <>
                <Section title="Totals">
                  <p>
                    <Badge tone="info">A</Badge> <Link to={`/sessions/${encodeURIComponent(a)}`}>{a}</Link> ({loaded[0].session.agentName}) ·{' '}
                    <Badge tone="info">B</Badge> <Link to={`/sessions/${encodeURIComponent(b)}`}>{b}</Link> ({loaded[1].session.agentName})
                  </p>
                  <Totals a={loaded[0]} b={loaded[1]} />
                </Section>
                <Section title="Events, step by step">
                  <AlignedEvents key={`${a}\n${b}`} a={loaded[0]} b={loaded[1]} />
                </Section>
              </>
            )
          }
        </Async>
      )}
    </Page>
  );
}
