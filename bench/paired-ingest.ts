/**
 * Two observe servers fed the same event batches in alternating rounds, so both see the same
 * database sizes and neither always meets the other's leftover I/O: what a setting costs ingest
 * (redaction.ts, encryption.ts).
 */
import { CLIENTS } from './observe-workload.ts';
import { createObserveKey, startObserve, stopServer, type BenchObserve } from './server.ts';
import { checked, rate, type Row } from './table.ts';

export interface KeyedServer extends BenchObserve {
  key: string;
}

export async function startKeyedServer(name: string, env: Record<string, string> = {}): Promise<KeyedServer> {
  const server = await startObserve(name, { env });
  return { ...server, key: await createObserveKey(server.base) };
}

export async function stopKeyedServer(server: KeyedServer): Promise<void> {
  await stopServer(server.child, server.dataDir, server.schema);
}

async function post(server: KeyedServer, body: string): Promise<void> {
  const response = await fetch(`${server.base}/api/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
    body,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`/api/events: ${response.status} ${text.slice(0, 300)}`);
}

/** Seconds to post the bodies with CLIENTS concurrent clients. */
async function send(server: KeyedServer, bodies: readonly string[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < bodies.length) await post(server, bodies[next++]!);
    }),
  );
  return (performance.now() - started) / 1000;
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export interface PairedRates {
  /** Events per second of each round. */
  onRates: number[];
  offRates: number[];
  /** Each round's throughput with the setting as a percentage of without. */
  shares: number[];
}

/** The bodies split into `rounds` slices, each posted to both servers (which goes first alternates). */
export async function comparePairedIngest(
  on: KeyedServer,
  off: KeyedServer,
  bodies: readonly string[],
  eventsPerBatch: number,
  rounds: number,
): Promise<PairedRates> {
  const rates: PairedRates = { onRates: [], offRates: [], shares: [] };
  for (let round = 0; round < rounds; round++) {
    const slice = bodies.slice(Math.floor((round * bodies.length) / rounds), Math.floor(((round + 1) * bodies.length) / rounds));
    const events = slice.length * eventsPerBatch;
    let onSeconds: number;
    let offSeconds: number;
    if (round % 2 === 0) {
      offSeconds = await send(off, slice);
      onSeconds = await send(on, slice);
    } else {
      onSeconds = await send(on, slice);
      offSeconds = await send(off, slice);
    }
    rates.onRates.push(events / onSeconds);
    rates.offRates.push(events / offSeconds);
    rates.shares.push((100 * offSeconds) / onSeconds);
  }
  return rates;
}

/** The three rows of a paired comparison: each median rate, and the share of "on" in "off" beside its target (none: printed as the cost). */
export function pairedIngestRows(rates: PairedRates, labels: { off: string; on: string; share: string }, targetShare?: number): Row[] {
  const share = median(rates.shares);
  const shareText = `${share.toFixed(1)} %`;
  return [
    [labels.off, '', `${rate(median(rates.offRates))} events/s`],
    [labels.on, '', `${rate(median(rates.onRates))} events/s`],
    [
      `${labels.share}, as a share of without (median; rounds ${rates.shares.map((s) => s.toFixed(0)).join(', ')} %)`,
      targetShare === undefined ? '' : `≥ ${targetShare} %`,
      targetShare === undefined ? shareText : checked(shareText, share >= targetShare),
    ],
  ];
}
