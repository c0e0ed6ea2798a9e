/**
 * The session page's trace tree in a real browser (see dashboard-harness.ts): a session holding a
 * nested span tree (events with metadata.otel, as OTLP ingest stores them) and SDK call pairs,
 * posted through POST /api/events; the rows nest, collapse and expand, the waterfall bars sit at
 * their start and end on the session's span, and error and open nodes are marked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { api, chromiumSkip, type EventInput, settled, shot, signIn, startStack, type Stack } from './dashboard-harness.ts';

const SESSION = 'ticket-981';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

/** An event as posted, with the metadata that carries its span. */
type TracedEventInput = EventInput & { metadata?: Record<string, unknown> };

interface Span {
  id: string;
  parent: string | null;
  name: string;
  kind: 'agent' | 'chain' | 'llm' | 'tool' | 'retriever';
  start: number;
  end: number;
  fail?: boolean;
}

// Offsets in ms from the session's first event; the whole tree spans 0–5,500 ms.
const SPANS: Span[] = [
  { id: 'a000000000000001', parent: null, name: 'answer ticket', kind: 'agent', start: 0, end: 4000 },
  { id: 'a000000000000002', parent: 'a000000000000001', name: 'plan', kind: 'chain', start: 100, end: 1500 },
  { id: 'a000000000000003', parent: 'a000000000000002', name: 'chat gpt-4o-mini', kind: 'llm', start: 150, end: 1100 },
  { id: 'a000000000000004', parent: 'a000000000000002', name: 'search_kb', kind: 'retriever', start: 1150, end: 1450 },
  { id: 'a000000000000005', parent: 'a000000000000001', name: 'lookup_order', kind: 'tool', start: 1600, end: 2400 },
  { id: 'a000000000000006', parent: 'a000000000000001', name: 'charge_card', kind: 'tool', start: 2500, end: 3200, fail: true },
  { id: 'a000000000000007', parent: 'a000000000000001', name: 'summarize', kind: 'llm', start: 3300, end: 3900 },
];

function seedEvents(origin: number): TracedEventInput[] {
  const at = (offset: number) => new Date(origin + offset).toISOString();
  const base = { sessionId: SESSION, agentId: 'support-bot' };
  const events: TracedEventInput[] = [{ ...base, eventType: 'session_started', timestamp: at(0), payload: { agentName: 'Support bot' } }];
  for (const span of SPANS) {
    const metadata = {
      otel: {
        traceId: TRACE,
        spanId: span.id,
        parentSpanId: span.parent,
        name: span.name,
        kind: span.kind,
        startTime: at(span.start),
        endTime: at(span.end),
        durationMs: span.end - span.start,
        resource: { 'service.name': 'support-bot' },
      },
    };
    const callId = `span-${span.id}`;
    const llm = { callId, provider: 'openai', model: 'gpt-4o-mini' };
    if (span.kind === 'llm') {
      events.push(
        {
          ...base,
          metadata,
          eventType: 'llm_call',
          timestamp: at(span.start),
          payload: { ...llm, messages: [{ role: 'user', content: 'Where is my order?' }] },
        },
        {
          ...base,
          metadata,
          eventType: 'llm_response',
          timestamp: at(span.end),
          payload: {
            ...llm,
            completion: 'Let me look it up.',
            finishReason: 'stop',
            usage: { inputTokens: 812, outputTokens: 96 },
            costUsd: 0.00018,
            latencyMs: span.end - span.start,
          },
        },
      );
    } else if (span.kind === 'tool') {
      const ms = span.end - span.start;
      events.push(
        { ...base, metadata, eventType: 'tool_call', timestamp: at(span.start), payload: { callId, toolName: span.name, arguments: { order: 981 } } },
        span.fail
          ? {
              ...base,
              metadata,
              eventType: 'tool_error',
              timestamp: at(span.end),
              payload: { callId, toolName: span.name, error: 'card declined', durationMs: ms },
            }
          : {
              ...base,
              metadata,
              eventType: 'tool_response',
              timestamp: at(span.end),
              payload: { callId, toolName: span.name, result: { status: 'shipped' }, durationMs: ms },
            },
      );
    } else {
      events.push({ ...base, metadata, eventType: 'custom', timestamp: at(span.start), payload: { type: span.kind, data: { name: span.name } } });
    }
  }
  // After the traced part, the agent goes on through the SDK: call pairs without spans, and a call with no outcome yet.
  events.push(
    { ...base, eventType: 'tool_call', timestamp: at(4200), payload: { callId: 'sdk-mail', toolName: 'send_email', arguments: { to: 'customer' } } },
    { ...base, eventType: 'tool_response', timestamp: at(4500), payload: { callId: 'sdk-mail', toolName: 'send_email', result: 'sent', durationMs: 300 } },
    { ...base, eventType: 'llm_call', timestamp: at(4600), payload: { callId: 'sdk-llm', provider: 'anthropic', model: 'claude-3-5-haiku', messages: [] } },
    {
      ...base,
      eventType: 'llm_response',
      timestamp: at(5400),
      payload: {
        callId: 'sdk-llm',
        provider: 'anthropic',
        model: 'claude-3-5-haiku',
        completion: 'Done.',
        finishReason: 'stop',
        usage: { inputTokens: 300, outputTokens: 20 },
        costUsd: 0.0003,
        latencyMs: 800,
      },
    },
    { ...base, eventType: 'tool_call', timestamp: at(5500), payload: { callId: 'sdk-wait', toolName: 'wait_for_human', arguments: {} } },
  );
  return events;
}

describe('dashboard in a real browser: trace tree', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let eventCount: number;
  before(async () => {
    stack = await startStack();
    const events = seedEvents(Date.now() - 60_000);
    eventCount = events.length;
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events });
  });
  after(() => stack?.close());

  test('the session page shows the nested spans and SDK pairs as a collapsible tree with a waterfall, beside a working timeline', async () => {
    const { page } = stack;
    await signIn(stack, { observe: stack.observeKey });
    await page.goto(`/sessions/${SESSION}`);
    await page.getByRole('heading', { name: `Session ${SESSION}` }).waitFor();
    const tree = page.getByRole('list', { name: 'Trace tree of the session' });
    await tree.waitFor();
    const rows = page.getByTestId('tree-row');
    const row = (name: string) => rows.filter({ has: page.getByRole('link', { name, exact: true }) });
    const names = async () => rows.locator('.trace-name').allInnerTexts();
    const everything = [
      'session_started',
      'answer ticket',
      'plan',
      'chat gpt-4o-mini',
      'search_kb',
      'lookup_order',
      'charge_card',
      'summarize',
      'send_email',
      'anthropic/claude-3-5-haiku',
      'wait_for_human',
    ];
    assert.deepEqual(await names(), everything);
    assert.deepEqual(await rows.evaluateAll((els) => els.map((el) => Number(el.getAttribute('aria-level')))), [1, 1, 2, 3, 3, 2, 2, 2, 1, 1, 1]);

    // The waterfall: each bar starts and ends where its node does on the 0–5,500 ms span.
    const bar = async (name: string) =>
      row(name)
        .getByTestId('tree-bar')
        .evaluate((el) => ({ left: parseFloat((el as HTMLElement).style.left), width: parseFloat((el as HTMLElement).style.width) }));
    for (const [name, start, duration] of [
      ['answer ticket', 0, 4000],
      ['chat gpt-4o-mini', 150, 950],
      ['lookup_order', 1600, 800],
      ['send_email', 4200, 300],
      ['anthropic/claude-3-5-haiku', 4600, 800],
    ] as const) {
      const { left, width } = await bar(name);
      assert.ok(Math.abs(left - (start / 5500) * 100) < 0.01, `${name} starts at ${left}%`);
      assert.ok(Math.abs(width - (duration / 5500) * 100) < 0.01, `${name} is ${width}% wide`);
    }
    assert.match(await row('lookup_order').innerText(), /800 ms/);
    assert.match(await row('chat gpt-4o-mini').innerText(), /812 → 96 tokens/);

    // A failed call is marked, and so is a call with no outcome yet.
    assert.match((await row('charge_card').getAttribute('class')) ?? '', /trace-error/);
    assert.match(await row('charge_card').innerText(), /error[\s\S]*card declined/);
    assert.match(
      await row('wait_for_human')
        .locator('.badge')
        .allInnerTexts()
        .then((b) => b.join(' ')),
      /open/,
    );
    assert.match(await row('wait_for_human').innerText(), /0 ms so far/);

    // Collapse and expand, per node and all at once.
    await page.getByRole('button', { name: 'Collapse plan' }).click();
    assert.deepEqual(
      await names(),
      everything.filter((n) => n !== 'chat gpt-4o-mini' && n !== 'search_kb'),
    );
    assert.equal(await page.getByRole('button', { name: 'Expand plan' }).getAttribute('aria-expanded'), 'false');
    await page.getByRole('button', { name: 'Collapse answer ticket' }).click();
    assert.deepEqual(await names(), ['session_started', 'answer ticket', 'send_email', 'anthropic/claude-3-5-haiku', 'wait_for_human']);
    await page.getByRole('button', { name: 'Expand answer ticket' }).click();
    assert.equal(await rows.count(), everything.length - 2, 'plan stays collapsed inside its expanded parent');
    await page.getByRole('button', { name: 'Expand plan' }).focus();
    await page.keyboard.press('Enter');
    assert.deepEqual(await names(), everything);
    await page.getByRole('button', { name: 'Collapse all' }).click();
    assert.equal(await rows.count(), 5);
    await page.getByRole('button', { name: 'Expand all' }).click();
    assert.deepEqual(await names(), everything);

    // The flat timeline still lists every event below the tree.
    assert.equal(await page.getByTestId('timeline-event').count(), eventCount);
    await settled(page);
    await page.getByRole('heading', { name: 'Trace tree' }).evaluate((el) => {
      el.scrollIntoView({ block: 'start' });
      window.scrollBy(0, -24);
    });
    await shot(page, 'session-tree');
    stack.noProblems();
  });
});
