import { useEffect, useEffectEvent, useRef, useState, type KeyboardEvent } from 'react';
import { observe, type ObserveAnswer } from '../api.ts';
import { InlineSelect, TableScroll } from '../components.tsx';
import { EventTypeBadge, summarize } from '../events.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtTime, fmtUsd } from '../format.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Badge, Empty, JsonView, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';

type ReplayAnswer = ObserveAnswer<'GET /api/sessions/{id}/replay'>;
type ReplayStep = ReplayAnswer['steps'][number];
type ReplayContext = NonNullable<ReplayStep['context']>;

const PAGE = 200;
const SPEEDS = [0.5, 1, 2, 4] as const;
const SPEED_CHOICES = SPEEDS.map((s) => ({ value: s, label: `${s} step${s === 1 ? '' : 's'}/s` }));

function Messages({ messages }: { messages: unknown }) {
  if (!Array.isArray(messages)) return <JsonView value={messages} />;
  return (
    <ol className="messages">
      {messages.map((m, i) => {
        const message = (m ?? {}) as { role?: unknown; content?: unknown };
        return (
          <li key={i}>
            <span className="role">{String(message.role ?? '?')}</span>{' '}
            <span className="content">{typeof message.content === 'string' ? message.content : JSON.stringify(message.content)}</span>
          </li>
        );
      })}
    </ol>
  );
}

function ContextView({ context }: { context: ReplayContext }) {
  const lastLlm = context.llmHistory.slice(-3).reverse();
  const lastTools = context.toolResults.slice(-8).reverse();
  return (
    <>
      <Stats>
        <Stat label="Elapsed" value={fmtDuration(context.elapsedMs)} />
        <Stat label="Spend so far" value={fmtUsd(context.cumulativeCostUsd)} />
        <Stat label="Errors so far" value={fmtNumber(context.errorCount)} />
        <Stat label="LLM calls" value={fmtNumber(context.llmHistory.length)} hint="last 50 kept" />
        <Stat label="Tool results" value={fmtNumber(context.toolResults.length)} hint="last 50 kept" />
      </Stats>
      <div className="chips" aria-label="Events so far by type">
        {Object.entries(context.eventCounts).map(([type, count]) => (
          <span key={type} className="chip">
            {type} <strong>{count}</strong>
          </span>
        ))}
      </div>
      {context.pendingApprovals.length > 0 && (
        <>
          <h3>Waiting for approval</h3>
          <ul>
            {context.pendingApprovals.map((a) => (
              <li key={a.requestId}>
                <strong>{a.action ?? 'action'}</strong> ({a.urgency ?? 'normal'}) since {fmtTime(a.requestedAt)} · request <code>{a.requestId}</code>
              </li>
            ))}
          </ul>
        </>
      )}
      <h3>What the model had seen</h3>
      {lastLlm.length === 0 ? (
        <Empty>No LLM call up to this step.</Empty>
      ) : (
        lastLlm.map((call) => (
          <details key={call.callId} className="llm" open={call === lastLlm[0]}>
            <summary>
              {call.provider}/{call.model} · call <code>{call.callId}</code> · {fmtUsd(call.costUsd)} · {fmtDuration(call.latencyMs)}
            </summary>
            {call.messages !== null && <Messages messages={call.messages} />}
            <p>
              <span className="role">response</span>{' '}
              {call.response === null ? (
                <em>not yet answered at this step</em>
              ) : typeof call.response === 'string' ? (
                call.response
              ) : (
                JSON.stringify(call.response)
              )}
            </p>
          </details>
        ))
      )}
      <h3>Tool results so far</h3>
      {lastTools.length === 0 ? (
        <Empty>No tool result up to this step.</Empty>
      ) : (
        <TableScroll>
          <table>
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">Outcome</th>
                <th scope="col" className="num">
                  Duration
                </th>
                <th scope="col">Result or error</th>
              </tr>
            </thead>
            <tbody>
              {lastTools.map((t) => (
                <tr key={t.callId}>
                  <td>
                    <code>{t.toolName ?? t.callId}</code>
                  </td>
                  <td>{t.ok ? <Badge tone="good">ok</Badge> : <Badge tone="bad">failed</Badge>}</td>
                  <td className="num">{fmtDuration(t.durationMs)}</td>
                  <td className="clip">{JSON.stringify(t.ok ? t.result : t.error)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      {context.warnings.length > 0 && (
        <>
          <h3>Warnings</h3>
          <ul>
            {context.warnings.map((w) => (
              <li key={`${w.eventId}-${w.code}`}>
                <Badge tone="warn">{w.code}</Badge> step {w.eventIndex}: {w.message}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}

export function ReplayPage({ id }: { id: string }) {
  const { query } = useLocation();
  const requested = Math.max(0, Number(query.get('step') ?? 0) || 0);
  const [playing, setPlaying] = useState(false);
  const [speed, setSpeed] = useState<(typeof SPEEDS)[number]>(1);
  const pages = useRef(new Map<number, ReplayAnswer>());
  const pageIndex = Math.floor(requested / PAGE);
  const page = useAsync(
    async (signal) => {
      const cached = pages.current.get(pageIndex);
      if (cached) return cached;
      const loaded = await observe('GET /api/sessions/{id}/replay', { params: { id }, query: { offset: pageIndex * PAGE, limit: PAGE }, signal });
      pages.current.set(pageIndex, loaded);
      return loaded;
    },
    [id, pageIndex],
  );
  // The step count stays known while the next page loads (its data is undefined meanwhile).
  const [knownTotal, setKnownTotal] = useState(0);
  if (page.data && page.data.totalSteps !== knownTotal) setKnownTotal(page.data.totalSteps);
  const totalSteps = page.data?.totalSteps ?? knownTotal;
  const step = totalSteps > 0 ? Math.min(requested, totalSteps - 1) : 0;
  const goTo = (next: number) => {
    const target = Math.max(0, Math.min(next, Math.max(0, totalSteps - 1)));
    // Playback stops on the last step, however it was reached.
    if (target >= totalSteps - 1) setPlaying(false);
    setQuery({ step: String(target) });
  };

  const advance = useEffectEvent(() => goTo(step + 1));
  useEffect(() => {
    if (!playing || step >= totalSteps - 1) return;
    const timer = window.setTimeout(advance, 1000 / speed);
    return () => window.clearTimeout(timer);
  }, [playing, step, speed, totalSteps]);

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const target = event.target as HTMLElement;
    if (['INPUT', 'SELECT', 'TEXTAREA'].includes(target.tagName)) return;
    const moves: Record<string, number> = { ArrowLeft: step - 1, ArrowRight: step + 1, Home: 0, End: totalSteps - 1 };
    if (event.key in moves) {
      event.preventDefault();
      goTo(moves[event.key]!);
    }
  };

  const current = page.data?.steps.find((s) => s.index === step);

  return (
    <Page title={`Replay of ${id}`} subtitle={<Link to={`/sessions/${encodeURIComponent(id)}`}>← Session timeline and chain check</Link>}>
      <Async state={page} label="Reconstructing the session…" isEmpty={(p) => p.totalSteps === 0} empty="This session has no events to replay.">
        {(data) => (
          <>
            <Stats>
              <Stat label="Steps" value={fmtNumber(data.totalSteps)} />
              <Stat label="Duration" value={fmtDuration(data.summary.totalDurationMs)} />
              <Stat label="Spend" value={fmtUsd(data.summary.totalCost)} />
              <Stat label="LLM calls" value={fmtNumber(data.summary.totalLlmCalls)} hint={data.summary.models.join(', ') || undefined} />
              <Stat label="Tool calls" value={fmtNumber(data.summary.totalToolCalls)} hint={data.summary.tools.join(', ') || undefined} />
              <Stat label="Errors" value={fmtNumber(data.summary.totalErrors)} />
              <Stat
                label="Hash chain"
                value={data.chainValid ? <Badge tone="good">valid</Badge> : <Badge tone="bad">broken</Badge>}
                hint="verified from the stored events on this load; the session page shows where it breaks"
              />
            </Stats>
            <div className="player" onKeyDown={onKeyDown} role="group" aria-label="Replay controls (arrow keys step, Home and End jump)">
              <div className="player-buttons">
                <button type="button" className="secondary" onClick={() => goTo(0)} disabled={step === 0} aria-label="First step">
                  « First
                </button>
                <button type="button" className="secondary" onClick={() => goTo(step - 1)} disabled={step === 0}>
                  <span aria-hidden="true">◀</span> Previous step
                </button>
                <button type="button" onClick={() => setPlaying((p) => !p && step < totalSteps - 1)} aria-pressed={playing} disabled={totalSteps <= 1}>
                  {playing ? 'Pause' : 'Play'}
                </button>
                <button type="button" className="secondary" onClick={() => goTo(step + 1)} disabled={step >= totalSteps - 1}>
                  Next step <span aria-hidden="true">▶</span>
                </button>
                <button type="button" className="secondary" onClick={() => goTo(totalSteps - 1)} disabled={step >= totalSteps - 1} aria-label="Last step">
                  Last »
                </button>
                <InlineSelect id="replay-speed" label="Speed" value={speed} options={SPEED_CHOICES} onChange={setSpeed} />
              </div>
              <div className="field slider">
                <label htmlFor="replay-step">
                  Step <output data-testid="replay-position">{step + 1}</output> of {totalSteps}
                </label>
                <input id="replay-step" type="range" min={0} max={Math.max(0, totalSteps - 1)} value={step} onChange={(e) => goTo(Number(e.target.value))} />
              </div>
            </div>
            <div className="replay">
              <Section title="Steps">
                <ol className="steps" start={pageIndex * PAGE + 1}>
                  {data.steps.map((s) => (
                    <li key={s.index}>
                      <button type="button" className="step" aria-current={s.index === step ? 'step' : undefined} onClick={() => goTo(s.index)}>
                        <span className="seq">{s.index + 1}</span>
                        <EventTypeBadge type={s.event.eventType} />
                        <time className="muted small" dateTime={s.event.timestamp}>
                          {fmtTime(s.event.timestamp)}
                        </time>
                      </button>
                    </li>
                  ))}
                </ol>
              </Section>
              <div>
                {!current ? (
                  <Section title="Step">
                    <p className="loading">Loading step…</p>
                  </Section>
                ) : (
                  <>
                    <Section title={`Step ${current.index + 1}: ${current.event.eventType}`} id="replay-current">
                      <p aria-live="polite">
                        <EventTypeBadge type={current.event.eventType} /> at {fmtDateTime(current.event.timestamp)} —{' '}
                        {summarize(current.event.eventType, current.event.payload)}
                      </p>
                      <JsonView value={current.event.payload} label="Payload of this step" />
                      {current.pairedEvent && (
                        <div className="paired">
                          <h3>
                            Paired with <EventTypeBadge type={current.pairedEvent.eventType} /> (step {current.pairedEvent.seq + 1},{' '}
                            {fmtDuration(current.pairDurationMs)} apart)
                          </h3>
                          <p>{summarize(current.pairedEvent.eventType, current.pairedEvent.payload)}</p>
                          <button
                            type="button"
                            className="link"
                            onClick={() => goTo(data.steps.find((s) => s.event.id === current.pairedEvent!.id)?.index ?? current.pairedEvent!.seq)}
                          >
                            Go to the paired step
                          </button>
                        </div>
                      )}
                    </Section>
                    {current.context && (
                      <Section title="Reconstructed context after this step">
                        <ContextView context={current.context} />
                      </Section>
                    )}
                  </>
                )}
              </div>
            </div>
          </>
        )}
      </Async>
    </Page>
  );
}
