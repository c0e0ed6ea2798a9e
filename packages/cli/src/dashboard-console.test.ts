/**
 * The console of issue 42 in a real browser (see dashboard-harness.ts): counts that agree with
 * their nouns, a header that promises decisions only to a key that can decide, evaluator rules that
 * get an id the form explains, every page at a phone's width and in the dark scheme, and axe-core
 * on every page at 1400 px and 390 px in light and dark.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  ADMIN_KEY,
  api,
  chromiumSkip,
  nav,
  seedGate,
  seedObserve,
  seriousViolations,
  settled,
  shot,
  signIn,
  startStack,
  type Stack,
  DESKTOP,
  PHONE,
} from './dashboard-harness.ts';

/** The pages whose dark and phone pictures docs/screenshots/ keeps (`npm run screenshots`), by the name of the file. */
const SHOTS: Record<string, string> = { '/': 'overview', '/sessions': 'sessions', '/sessions/researcher-1': 'session', '/approvals': 'approvals' };

/** Every page of the sidebar, and a detail page of each kind the seed data has. */
async function everyPage(stack: Stack, details: string[]): Promise<string[]> {
  const { page } = stack;
  await page.setViewportSize(DESKTOP);
  await page.goto('/');
  await nav(page).getByRole('link', { name: 'Overview' }).waitFor();
  const listed = await nav(page)
    .getByRole('link')
    .evaluateAll((links) => links.map((link) => new URL((link as HTMLAnchorElement).href).pathname));
  return [...new Set(listed), ...details];
}

/** Opens a page and waits until it has its heading and nothing on it is loading. */
async function open(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await page.locator('main h1').first().waitFor();
  await settled(page);
}

describe('dashboard in a real browser: the console', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    await seedObserve(stack);
    await seedGate(stack);
  });
  after(() => stack?.close());

  test('a gate key that cannot decide is not announced as deciding', async () => {
    const { page } = stack;
    const reader = (await api<{ key: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/api-keys', { name: 'auditor', scopes: ['request:read'] })).key;
    await signIn(stack, { observe: stack.observeKey, gate: reader });
    const header = await page.locator('.whoami').innerText();
    assert.match(header, /Viewing as dashboard:Ada \(this key cannot decide\)/);
    assert.doesNotMatch(header, /Deciding as/);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Vigil' }).waitFor();
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
    assert.match(await page.locator('.whoami').innerText(), /Deciding as dashboard:Ada ·/);
    stack.noProblems();
  });

  test('an LLM call of one message reads "1 message" in the session timeline', async () => {
    const { page } = stack;
    await page.goto('/sessions/researcher-1');
    await page.getByRole('heading', { name: 'Session researcher-1' }).waitFor();
    await settled(page);
    await page.getByText('openai/gpt-4o-mini · 1 message', { exact: true }).first().waitFor();
    assert.equal(await page.getByText(/· 1 messages/).count(), 0);
    stack.noProblems();
  });

  test('an evaluator rule typed without an id gets one, which the form explains', async () => {
    const { page } = stack;
    await page.goto('/evaluators');
    await page.getByRole('heading', { name: 'Evaluators', level: 1 }).waitFor();
    await page.getByText(/Each rule has an id that its violations name/).waitFor();
    await page.getByLabel('Name').fill('No shell');
    await page.getByLabel('Rules, one JSON object a line').fill('{"type": "tool_denylist", "tools": ["shell_*"]}');
    await page.getByRole('button', { name: 'Save evaluator' }).click();
    await page.getByText('Evaluator “No shell” saved').waitFor();
    await page.getByTestId('evaluators').getByRole('row').filter({ hasText: 'No shell' }).filter({ hasText: '1 rule: rule-1 (tool_denylist)' }).waitFor();
    const { evaluators } = await api<{ evaluators: { name: string; rules: { id: string }[] | null }[] }>(
      stack.observeUrl,
      stack.observeKey,
      'GET',
      '/api/evaluators',
    );
    assert.deepEqual(evaluators.find((e) => e.name === 'No shell')?.rules?.[0]?.id, 'rule-1');
    stack.noProblems();
  });

  test('a guardrail that requires a gate policy names it, and its cooldown is a window like any other', async () => {
    const { page } = stack;
    const { policies } = await api<{ policies: { id: string; name: string }[] }>(stack.gateUrl, ADMIN_KEY, 'GET', '/api/policies');
    const payments = policies.find((p) => p.name === 'payments')!;
    await api(stack.observeUrl, stack.observeKey, 'POST', '/api/guardrails', {
      name: 'Billing needs approval when failing',
      agentId: 'billing-agent',
      conditionType: 'error_rate_threshold',
      conditionConfig: { threshold: 50, windowMs: 3_600_000 },
      actionType: 'approval_policy',
      actionConfig: { policyId: payments.id },
      cooldownMinutes: 60,
      dryRun: true,
    });
    await page.goto('/guardrails');
    const row = page.getByRole('row').filter({ hasText: 'Billing needs approval when failing' });
    await row.getByText('require approval policy “payments”').waitFor();
    const text = await row.innerText();
    assert.match(text, /error rate above 50% over 1 hour/);
    assert.match(text, /cooldown 1 hour/);
    assert.doesNotMatch(text, new RegExp(payments.id));
    stack.noProblems();
  });

  describe('every page, on any screen and in either scheme', () => {
    let pages: string[];
    before(async () => {
      const request = await api<{ id: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/requests', {
        action: 'pay',
        params: { amount: 2500, to: 'ACME' },
        context: { agentId: 'billing-agent' },
      });
      const { benchmarks } = await api<{ benchmarks: { id: string }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/benchmarks');
      const { calls } = await api<{ calls: { id: string }[] }>(stack.observeUrl, stack.observeKey, 'GET', '/api/llm-calls?limit=1');
      pages = await everyPage(stack, [
        '/sessions/researcher-1',
        '/sessions/researcher-1/replay',
        '/compare?a=researcher-1&b=researcher-4',
        '/agents/researcher',
        `/benchmarks/${benchmarks[0]!.id}`,
        `/llm/calls/${calls[0]!.id}`,
        `/approvals/${request.id}`,
      ]);
      assert.ok(pages.length >= 25, `the sidebar lists the pages: ${pages.join(' ')}`);
    });
    after(async () => {
      await stack.page.setViewportSize(DESKTOP);
      await stack.page.emulateMedia({ colorScheme: 'light' });
      await stack.page.evaluate(() => localStorage.removeItem('vigil.theme'));
    });

    test('at 360 and 390 px every page fits the screen: the navigation folds behind a menu button, wide tables scroll inside their cards', async () => {
      const { page } = stack;
      const overflowing: string[] = [];
      for (const path of pages) {
        await page.setViewportSize({ ...PHONE, width: 360 });
        await open(page, path);
        // Widened in place: the layout follows the width by CSS alone.
        for (const width of [360, PHONE.width]) {
          await page.setViewportSize({ ...PHONE, width });
          if (SHOTS[path] && width === PHONE.width) await shot(page, `${SHOTS[path]}-phone`);
          const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
          if (scrollWidth > width) overflowing.push(`${path} at ${width} px: ${scrollWidth} px wide`);
        }
      }
      assert.deepEqual(overflowing, [], 'no page is wider than the screen');

      await open(page, '/sessions');
      assert.equal(await nav(page).isVisible(), false, 'the navigation is folded away');
      const menu = page.getByRole('button', { name: 'Menu' });
      assert.equal(await menu.getAttribute('aria-expanded'), 'false');
      await menu.click();
      assert.equal(await menu.getAttribute('aria-expanded'), 'true');
      await shot(page, 'navigation-phone');
      await nav(page).getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
      assert.equal(await nav(page).isVisible(), false, 'opening a page folds the navigation again');

      // The sessions table is wider than a phone: it scrolls inside its card, and takes keyboard focus to do so.
      await open(page, '/sessions');
      const scroller = page.locator('.table-scroll').first();
      const [scrollWidth, clientWidth] = await scroller.evaluate((el) => [el.scrollWidth, el.clientWidth]);
      assert.ok(scrollWidth > clientWidth, `the table scrolls inside its card (${scrollWidth} > ${clientWidth})`);
      assert.equal(await scroller.getAttribute('tabindex'), '0');
      stack.noProblems();
    });

    test('the dark scheme follows the system setting until the toggle picks one, which outlasts a reload', async () => {
      const { page } = stack;
      await page.setViewportSize(DESKTOP);
      const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      const scheme = () => page.evaluate(() => document.documentElement.dataset.theme);
      await page.emulateMedia({ colorScheme: 'dark' });
      await open(page, '/');
      assert.equal(await scheme(), 'dark');
      assert.equal(await background(), 'rgb(15, 20, 26)');
      const toggle = page.getByRole('button', { name: 'Dark scheme' });
      assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
      // The charts draw in the dark scheme too (their colours are read from the stylesheet).
      await page.locator('canvas[role="img"]').first().waitFor();

      await toggle.click();
      assert.equal(await scheme(), 'light');
      assert.equal(await background(), 'rgb(245, 246, 248)');
      await page.reload();
      await page.locator('main h1').first().waitFor();
      assert.equal(await scheme(), 'light', 'the choice outlasts a reload though the system says dark');
      await page.getByRole('button', { name: 'Dark scheme' }).click();
      await page.emulateMedia({ colorScheme: 'light' });
      await page.reload();
      await page.locator('main h1').first().waitFor();
      assert.equal(await scheme(), 'dark', 'and the system setting no longer decides');
      stack.noProblems();
    });

    test('the keyboard reaches everything with visible focus: the skip link first, then the navigation, the toggle and the tables', async () => {
      const { page } = stack;
      await page.setViewportSize(DESKTOP);
      await open(page, '/sessions');
      const focused = () =>
        page.evaluate(() => {
          const el = document.activeElement as HTMLElement;
          const style = getComputedStyle(el);
          // A date input's calendar button is inside its shadow root, with Chromium's own focus ring: the input itself is not :focus then.
          const outline = el.matches(':focus') ? `${style.outlineStyle} ${style.outlineWidth}` : 'inner';
          return { text: (el.textContent ?? '').trim().slice(0, 40), tag: el.tagName, outline };
        });
      // The skip link is the first stop of the page (it comes first in the document), shown when focused.
      assert.equal(await page.evaluate(() => document.querySelector('a[href], button, input, select, textarea, [tabindex]')?.textContent), 'Skip to content');
      await page.getByRole('link', { name: 'Skip to content' }).focus();
      assert.ok(((await page.getByRole('link', { name: 'Skip to content' }).boundingBox())?.x ?? -1) >= 0, 'the focused skip link is on screen');
      const seen: { text: string; tag: string; outline: string }[] = [];
      // Forward through the sidebar and the header to the first table.
      while (seen.length < 100 && seen.at(-1)?.tag !== 'DIV') {
        await page.keyboard.press('Tab');
        seen.push(await focused());
      }
      const unmarked = seen.filter((f) => !/^(solid 3px|inner)$/.test(f.outline));
      assert.deepEqual(unmarked, [], 'every focused element shows the focus outline');
      assert.ok(
        seen.some((f) => f.text === 'Dark scheme'),
        'the scheme toggle is reached',
      );
      assert.ok(
        seen.some((f) => f.tag === 'DIV'),
        'a table’s scroll area is reached',
      );
      // Enter on the skip link moves the focus to the content.
      await page.getByRole('link', { name: 'Skip to content' }).focus();
      await page.keyboard.press('Enter');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
      stack.noProblems();
    });

    // Each page is opened once and checked in all four forms: the layout follows the viewport by CSS
    // alone and, with no scheme picked, the scheme follows the system setting at once (theme.ts), so
    // the page need not load again for each form (a load costs about as much as axe's run here).
    test('axe-core finds no serious or critical violation on any page at 1400 and 390 px, in light and dark', async () => {
      const { page } = stack;
      // The scheme picked by the toggle in the test above would outrank the system setting.
      await page.evaluate(() => localStorage.removeItem('vigil.theme'));
      const found: string[] = [];
      for (const path of pages) {
        await page.setViewportSize(DESKTOP);
        await open(page, path);
        for (const scheme of ['light', 'dark'] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          // The page hears of the system's change at its next rendering step, not at once.
          await page.waitForFunction((theme) => document.documentElement.dataset.theme === theme, scheme);
          for (const viewport of [DESKTOP, PHONE]) {
            await page.setViewportSize(viewport);
            await settled(page);
            if (scheme === 'dark' && viewport === DESKTOP && SHOTS[path]) await shot(page, `${SHOTS[path]}-dark`);
            for (const violation of await seriousViolations(page)) found.push(`${path} at ${viewport.width} px, ${scheme}: ${violation}`);
          }
        }
      }
      assert.deepEqual(found, [], 'no serious or critical accessibility violation');
      stack.noProblems();
    });
  });
});
