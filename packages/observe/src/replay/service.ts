import { toIso } from '@vigil/platform';
import { type EventReader, sessionDurationMs, sessionTimeline, verifySessionChain } from '../sessions/index.ts';
import { writerOfStored, type SessionRow } from '../events/index.ts';
import { ByteWriter } from './bytes.ts';
import type { LoadedReplay, ReplaySource, ServedReplay } from './cache.ts';
import { toReplayEvent, type ReplayEvent, type ReplayEventType } from './state.ts';

/** How the replay cache reads a session: its chain verified now, or its whole timeline. */
export function replaySource(reader: EventReader, sessionId: string): ReplaySource {
  return {
    async verify() {
      const chain = await verifySessionChain(reader, sessionId);
      return chain && { session: chain.session, chainValid: chain.verdict.valid };
    },
    load: () => loadReplay(reader, sessionId),
  };
}

/** The session's timeline (every stored event, the chain verified over them, one snapshot) as replay events. */
async function loadReplay(reader: EventReader, sessionId: string): Promise<LoadedReplay | undefined> {
  const timeline = await sessionTimeline(reader, sessionId);
  if (!timeline) return undefined;
  const { session, rows, verdict } = timeline;
  const events = rows.map((row) =>
    toReplayEvent({
      id: row.id,
      seq: row.seq,
      eventType: row.event_type,
      severity: row.severity,
      ts: Number(row.ts),
      payloadJson: row.payload,
      writtenBy: writerOfStored(row.written_by),
    }),
  );
  return { session, chainValid: verdict.valid, events };
}

export interface ReplayPageQuery {
  offset: number;
  limit: number;
  eventTypes?: ReplayEventType[] | undefined;
  includeContext: boolean;
}

const quote = JSON.stringify;

function writeEvent(out: ByteWriter, event: ReplayEvent): void {
  out.text(`{"id":${quote(event.id)},"seq":${event.seq},"eventType":${quote(event.eventType)},"timestamp":"${event.timestamp}","payload":`);
  out.text(event.payloadJson);
  out.text(`,"writtenBy":${event.writtenBy === null ? 'null' : quote(event.writtenBy)}}`);
}

/**
 * The replay response (docs/api.md#replay) for one page, as UTF-8 JSON. With `eventTypes`, offset
 * and limit count the steps the filter keeps and every step keeps its index in the full replay;
 * the context is always rebuilt over every event.
 */
export function replayBody(served: ServedReplay, query: ReplayPageQuery): ByteWriter {
  const { session: row, chainValid, replay: session } = served;
  const { events, partner } = session;
  const indexes = query.eventTypes === undefined ? null : session.stepIndexes(query.eventTypes);
  const totalSteps = indexes === null ? events.length : indexes.length;
  const from = Math.min(query.offset, totalSteps);
  const to = Math.min(query.offset + query.limit, totalSteps);
  const indexAt = (k: number): number => (indexes === null ? k : indexes[k]!);
  const state = query.includeContext && from < to ? session.stateAt(indexAt(from)) : null;
  const out = new ByteWriter();
  out.text(`{"session":${replaySessionJson(row)},"chainValid":${chainValid},"totalSteps":${totalSteps},"steps":[`);
  for (let k = from; k < to; k++) {
    const i = indexAt(k);
    const event = events[i]!;
    const p = partner[i]!;
    const paired = p < 0 ? null : events[p]!;
    out.text(k === from ? `{"index":${i},"event":` : `,{"index":${i},"event":`);
    writeEvent(out, event);
    out.text(',"pairedEvent":');
    if (paired === null) out.text('null');
    else writeEvent(out, paired);
    out.text(`,"pairDurationMs":${paired === null ? 'null' : Math.abs(paired.ts - event.ts)}`);
    if (state !== null) {
      session.advanceTo(state, i + 1);
      out.text(',"context":');
      state.writeContext(out);
    }
    out.text('}');
  }
  if (state !== null) session.release(state);
  // The session's duration, the one every figure shows (not the span of its events: a late event does not stretch it).
  const { totalCost, ...counts } = session.summary;
  const summary = { totalCost, totalDurationMs: sessionDurationMs(row), ...counts };
  out.text(`],"pagination":{"offset":${query.offset},"limit":${query.limit},"hasMore":${to < totalSteps}},"summary":${JSON.stringify(summary)}}`);
  return out;
}

/** The session object of a replay (docs/api.md#replay): id, agentId, status, startedAt, endedAt (present once ended). */
function replaySessionJson(row: SessionRow): string {
  const ended = row.ended_at === null ? '' : `,"endedAt":"${toIso(Number(row.ended_at))}"`;
  return `{"id":${quote(row.id)},"agentId":${quote(row.agent_id)},"status":${quote(row.status)},"startedAt":"${toIso(Number(row.started_at))}"${ended}}`;
}
