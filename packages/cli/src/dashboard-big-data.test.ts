/**
 * A long session's page in a real browser (see dashboard-harness.ts): 3,000 events posted through
 * POST /api/events. Its timeline and trace tree keep a bounded number of rows in the page (the
 * rows near what is visible, virtual-list.tsx) and still reach the last event by scrolling; a link
 * to an event far down brings it into view, and an event committed after the page loaded is shown
 * at the end. How fast such pages are is measured by bench/dashboard-render.ts, not here.
 */
import assert from 'node:assert/strict';
import axe from 'axe-core';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { api, chromiumSkip, type EventInput, signIn, startStack, type Stack } from './dashboard-harness.ts';

const SESSION = 'long-run-1';
const EVENTS = 3000;
/** Far fewer rows than events: what a window of a list of 3,000 may hold. */
const BOUND = 150;

/** Event i of the session: tool calls and their responses in turn, 100 ms apart. */
function event(i: number, origin: number): EventInput {
  const base = { sessionId: SESSION, agentId: 'batch-agent', timestamp: new Date(origin + i * 100).toISOString() };
  const callId = `call-${i - (i % 2)}`;
  return i % 2 === 0
    ? { ...base, eventType: 'tool_call', payload: { toolName: `step_${i}`, callId, arguments: { page: i } } }
    : { ...base, eventType: 'tool_response', payload: { toolName: `step_${i - 1}`, callId, result: { ok: true }, durationMs: 80 } };
}

/** Scrolls an area to its bottom as a person would, a screenful at a time, until it is there. */
async function scrollToEnd(area: Locator): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const done = await area.evaluate((el) => {
      el.scrollTop += el.clientHeight;
      return el.scrollTop + el.clientHeight >= el.scrollHeight - 1;
    });
    if (done) break;
    await area.page().waitForTimeout(10);
  }
}

/** axe-core's serious and critical violations on the page (its source evaluated through the DevTools protocol, past the page's CSP). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  return page.evaluate(async () => {
    type Violation = { id: string; impact: string | null; nodes: { target: string[] }[] };
    const { violations } = await (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: Violation[] }> } }).axe.run(document);
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

describe('a 3,000-event session page', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  const origin = Date.now() - 3_600_000;

  before(async () => {
    stack = await startStack();
    for (let from = 0; from < EVENTS; from += 1000) {
      const events = Array.from({ length: 1000 }, (_, k) => event(from + k, origin));
      await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', { events });
    }
  });
  after(() => stack?.close());

  test('keeps a bounded number of rows in the page and reaches the last event by scrolling; links and live events still land', async () => {
    const { page } = stack;
    await signIn(stack, { observe: stack.observeKey });
    await page.goto(`/sessions/${SESSION}`);
    const timeline = page.getByRole('list', { name: 'Events in time order' });
    const timelineArea = page.getByRole('region', { name: 'Events in time order (scrolls)' });
    const rows = page.getByTestId('timeline-event');
    const treeRows = page.getByTestId('tree-row');
    await rows.first().waitFor();
    await treeRows.first().waitFor();
    await page.getByText(`All ${EVENTS.toLocaleString('en-US')} events verified`).waitFor();

    // The first event is shown, and only a window of the 3,000 (and of the 1,500 tree nodes).
    assert.match(await rows.first().innerText(), /#0\b/);
    const shown = await rows.count();
    assert.ok(shown > 5 && shown <= BOUND, `the timeline holds ${shown} rows of ${EVENTS}`);
    // The scroll areas take the keyboard's focus, and the page stays accessible.
    assert.equal(await timelineArea.getAttribute('tabindex'), '0');
    assert.deepEqual(await seriousViolations(page), []);
    const treeShown = await treeRows.count();
    assert.ok(treeShown > 5 && treeShown <= BOUND, `the tree holds ${treeShown} rows of ${EVENTS / 2}`);

    // Scrolling the timeline's area to its end reaches the last event, still with a window of rows.
    await scrollToEnd(timelineArea);
    await timeline.getByText(`#${EVENTS - 1}`, { exact: true }).waitFor();
    assert.match(await rows.last().innerText(), new RegExp(`#${EVENTS - 1}\\b[\\s\\S]*step_${EVENTS - 2}`));
    assert.ok((await rows.count()) <= BOUND, `after scrolling the timeline holds ${await rows.count()} rows`);

    // The tree's area scrolls to its last node too (its window follows the scroll a frame later).
    const treeArea = page.getByRole('region', { name: 'Trace tree of the session (scrolls)' });
    await scrollToEnd(treeArea);
    await treeArea.locator('.trace-name', { hasText: new RegExp(`^step_${EVENTS - 2}$`) }).waitFor();
    const lastNode = treeRows.last().locator('.trace-name');
    assert.equal(await lastNode.innerText(), `step_${EVENTS - 2}`);
    assert.ok((await treeRows.count()) <= BOUND);

    // Back at the top of the timeline, a tree link to an event 2,000 rows down brings it into view.
    await timelineArea.evaluate((el) => (el.scrollTop = 0));
    await rows.first().getByText('#0', { exact: true }).waitFor();
    const target = (await api<{ events: { id: string; seq: number }[] }>(stack.observeUrl, stack.observeKey, 'GET', `/api/sessions/${SESSION}/timeline`))
      .events[2000]!;
    await page.evaluate((id) => (window.location.hash = `#event-${id}`), target.id);
    const row = page.locator(`[id="event-${target.id}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), new RegExp(`#${target.seq}\\b`));
    // The list scrolls to the row, then again once its measured neighbours have settled (two frames later).
    await page
      .waitForFunction(
        (id) => {
          const el = document.getElementById(id);
          if (!el) return false;
          const box = el.getBoundingClientRect();
          const area = el.closest('.virtual-scroll')!.getBoundingClientRect();
          return box.top >= area.top - 1 && box.bottom <= area.bottom + 1;
        },
        `event-${target.id}`,
        { timeout: 5000 },
      )
      .catch(() => assert.fail('the linked event stays outside the visible part of the timeline'));

    // An event committed now is added at the end of the timeline.
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/events', {
      events: [
        {
          sessionId: SESSION,
          agentId: 'batch-agent',
          eventType: 'custom',
          timestamp: new Date(origin + EVENTS * 100).toISOString(),
          payload: { type: 'note', data: 'the very last one' },
        },
      ],
    });
    await page.getByText(`All ${(EVENTS + 1).toLocaleString('en-US')} events verified`).waitFor();
    await scrollToEnd(timelineArea);
    await timeline.getByText(/note: "?the very last one/).waitFor();
    assert.ok((await rows.count()) <= BOUND);
    stack.noProblems();
  });
});
