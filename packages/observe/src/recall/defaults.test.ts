// The documented defaults of GET /api/recall: limit 10, scope all, minScore 0.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { ago, drain, HOUR, llmCall } from './test-fixtures.ts';

interface RecallAnswer {
  results: { sourceType: 'event' | 'session'; sourceId: string; score: number }[];
  query: string;
  totalResults: number;
}

await describeEachDatabase('GET /api/recall defaults', (backend) => {
  let observe: TestObserve;
  const recall = async (query: string): Promise<RecallAnswer> => {
    const response = await observe.call({ method: 'GET', url: `/api/recall?${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as RecallAnswer;
  };

  before(async () => {
    observe = await startTestObserve(backend);
    // Six sessions of two invoice events each: 12 matching events and 6 matching sessions.
    for (let s = 0; s < 6; s++) {
      await ingest(observe, [
        llmCall(`inv-${s}`, 'billing-bot', `Send invoice ${s} to the customer`, ago((s + 2) * HOUR)),
        llmCall(`inv-${s}`, 'billing-bot', `Resend the overdue invoice ${s}`, ago((s + 1) * HOUR)),
      ]);
    }
    // A long text that mentions an invoice once: a weak but positive match, kept by minScore 0.
    await ingest(observe, [
      llmCall(
        'weather',
        'weather-bot',
        'The forecast for Oslo brings snow, strong wind, freezing rain, fog over the fjord, black ice on the roads, closed mountain passes, delayed ferries and one invoice',
        ago(HOUR),
      ),
    ]);
    await drain(observe);
  });
  after(() => observe.close());

  test('limit defaults to 10, scope to all (events and sessions), minScore to 0', async () => {
    const all = await recall('query=invoice&limit=100&scope=all&minScore=0');
    assert.ok(all.totalResults > 10, `${all.totalResults} results`);
    assert.ok(all.results.at(-1)!.score < 0.2, `the weakest match scores ${all.results.at(-1)!.score}`);
    assert.ok(all.results.some((r) => r.sourceType === 'event') && all.results.some((r) => r.sourceType === 'session'));
    const byDefault = await recall('query=invoice');
    assert.equal(byDefault.results.length, 10);
    assert.equal(byDefault.totalResults, all.totalResults);
    assert.deepEqual(byDefault.results, all.results.slice(0, 10));
  });
});
