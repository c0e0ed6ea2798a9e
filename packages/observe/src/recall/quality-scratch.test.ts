// Scratch (not committed): recall@k of the quality queries and agreement with the exact float ranking.
import { after, before, test } from 'node:test';
import { sqliteBackend } from '@vigil/platform/testing';
import { ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { LocalEmbedder } from './embedder.ts';
import { drain, topicEvents, customEvent } from './test-fixtures.ts';

let observe: TestObserve;
let ids: string[];
let noiseIds: string[];
const texts: string[] = [];
let seed = 7;
const next = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const WORDS = 'invoice billing payment refund charge subscription coupon discount tax currency ledger receipt statement account customer deployment rollout release rollback cluster container kubernetes pod node service gateway balancer certificate domain dns database migration schema table column index query replica backup snapshot restore transaction deadlock timeout latency email newsletter notification reminder slack message channel webhook endpoint callback retry queue backlog worker scheduler'.split(' ');
const sentence = () => Array.from({ length: 6 + Math.floor(next() * 8) }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ');
before(async () => {
  observe = await startTestObserve(sqliteBackend);
  ids = await ingest(observe, topicEvents());
  for (let i = 0; i < 3000; i++) texts.push(sentence());
  noiseIds = await ingest(observe, texts.map((t, i) => customEvent(`noise-${i % 50}`, 'agent-n', 'note', { text: t })));
  await drain(observe);
  while ((await observe.service.context.database.db.selectFrom('embedding_queue').select('source_id').limit(1).execute()).length > 0) await drain(observe);
});
after(() => observe.close());
const recall = async (query: string, limit: number, scope = 'events') =>
  ((await observe.call({ method: 'GET', url: `/api/recall?query=${encodeURIComponent(query)}&scope=${scope}&limit=${limit}` })).json() as { results: { sourceId: string; score: number }[] }).results;

test('report', async () => {
  const targets: [string, number][] = [['refund the duplicate charge', 8], ['rotate the expiring TLS certificate', 13], ['memory leak', 28], ['slack notification about latency', 16], ['GDPR erasure of personal data', 35], ['flight to Oslo', 48], ['messages stuck in the queue backlog', 30], ['database migration 0042', 2], ['welcome email for new subscribers', 3], ['blue green deployment of the checkout service', 1], ['billing statement', 0], ['kubernetes pod crashing', 14], ['deploying checkout', 1], ['migrating the orders table', 2], ['transcoding lecture videos', 40]];
  const at = (k: number) => targets.filter(([, _]) => true);
  const hits = { 1: 0, 3: 0, 10: 0 } as Record<number, number>;
  for (const [q, t] of targets) {
    const r = await recall(q, 10);
    for (const k of [1, 3, 10]) if (r.slice(0, k).some((x) => x.sourceId === ids[t])) hits[k]! += 1;
  }
  void at;
  // Agreement with the exact float ranking over 3,000 noise notes + 55 topics.
  const e = new LocalEmbedder();
  const corpus = new Map<string, Float32Array>();
  texts.forEach((t, i) => corpus.set(noiseIds[i]!, e.embedOne(`note: text: ${t}`)));
  let agree = 0, total = 0, scoreErr = 0;
  for (let qi = 0; qi < 40; qi++) {
    const q = sentence().split(' ').slice(0, 3).join(' ');
    const qv = e.embedOne(q);
    const exact = [...corpus].map(([id, v]) => ({ id, s: v.reduce((a, x, i) => a + x * qv[i]!, 0) })).sort((a, b) => b.s - a.s).slice(0, 10);
    const got = (await recall(q, 40)).filter((r) => corpus.has(r.sourceId)).slice(0, 10);
    const want = new Set(exact.map((x) => x.id));
    for (const g of got) if (want.has(g.sourceId)) agree += 1;
    total += 10;
    const byId = new Map(exact.map((x) => [x.id, x.s]));
    for (const g of got) if (byId.has(g.sourceId)) scoreErr = Math.max(scoreErr, Math.abs(g.score - Math.round(byId.get(g.sourceId)! * 1e6) / 1e6));
  }
  console.log(`QUALITY recall@1 ${hits[1]}/${targets.length} recall@3 ${hits[3]}/${targets.length} recall@10 ${hits[10]}/${targets.length}; agreement@10 with exact float ranking ${(agree / total).toFixed(4)} (max score diff ${scoreErr.toExponential(2)})`);
});
