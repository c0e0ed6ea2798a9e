// The rule that keeps the route tables derived: every route of both services declares, where it is
// registered, its operationId (when documented) and its scope (when it takes an API key). The HTTP
// kit refuses such a route at registration already; this walk holds both apps to it as a whole.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CHAT_CONFIGURED_ENV, startTestGate, type TestGate } from '@vigil/gate/testing';
import { startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { WILDCARD_PARAMETER, type RouteEntry, type ZodApp } from '@vigil/platform';
import { routeDeclarationProblems, sqliteBackend } from '@vigil/platform/testing';

let observe: TestObserve;
let gate: TestGate;
before(async () => {
  observe = await startTestObserve(sqliteBackend, { createKey: false });
  // Both chat platforms configured, so their interaction routes are walked too.
  gate = await startTestGate(sqliteBackend, { env: CHAT_CONFIGURED_ENV });
});
after(async () => {
  await observe.close();
  await gate.close();
});

/** The operationId each operation of the app's OpenAPI document has, by `METHOD /url` of the route table. */
function documentedNames(app: ZodApp): Map<string, string | undefined> {
  const document = app.swagger() as unknown as { paths: Record<string, Record<string, { operationId?: string }>> };
  const names = new Map<string, string | undefined>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const url = path.replace(new RegExp(`\\{${WILDCARD_PARAMETER}\\}$`), '*').replace(/\{([^}]+)\}/g, ':$1');
      names.set(`${method.toUpperCase()} ${url}`, operation.operationId);
    }
  }
  return names;
}

function problemsOf(service: string, app: ZodApp): string[] {
  const table: readonly RouteEntry[] = app.routeTable;
  const documented = documentedNames(app);
  const problems = routeDeclarationProblems(table).map((problem) => `${service}: ${problem}`);
  for (const route of table.filter((entry) => entry.documented)) {
    const id = `${route.method} ${route.url}`;
    if (documented.get(id) !== route.operationId)
      problems.push(`${service}: ${id} is "${documented.get(id)}" in the document, "${route.operationId}" where registered`);
  }
  return problems;
}

test('every route of observe and of the gate declares its operationId (when documented) and its scope (when it takes a key)', () => {
  for (const [service, app] of [
    ['observe', observe.service.app],
    ['gate', gate.service.app],
  ] as const) {
    assert.ok(app.routeTable.filter((route) => route.documented).length > 30, `${service}: the route table lists its routes`);
    assert.ok(
      app.routeTable.some((route) => route.takesKey),
      `${service}: some routes take a key`,
    );
  }
  assert.deepEqual([...problemsOf('observe', observe.service.app), ...problemsOf('gate', gate.service.app)], []);
});

test('the forwarded memory routes keep their scopes: reads need read, writes admin', () => {
  const forwarded = observe.service.app.routeTable.filter((route) => /^\/api\/(memory|lessons|community)(\/\*)?$/.test(route.url));
  assert.equal(forwarded.length, 6 * 5);
  for (const route of forwarded) assert.equal(route.scope, route.method === 'GET' ? 'read' : 'admin', `${route.method} ${route.url}`);
});
