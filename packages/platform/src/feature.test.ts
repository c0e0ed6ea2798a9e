// The feature kit's promises, on a real Fastify app and a real database: a shared feature's hooks apply app-wide, an encapsulated one's stay
// with its own routes, and shutdown stops each feature's running job and its own work before the shared resources close, features in reverse order.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Fastify from 'fastify';
import { ManualClock } from './clock.ts';
import { openDatabase } from './db.ts';
import { createFeatureHost, defineFeature } from './feature.ts';
import type { ZodApp } from './http.ts';
import { createLeaseTable, type LeaseTables } from './jobs.ts';

test('features: shared hooks app-wide, encapsulated ones kept to their feature, and shutdown runs jobs, then onClose, per feature in reverse order, then the shared close', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-feature-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const database = await openDatabase<LeaseTables>({ kind: 'sqlite', file: join(dir, 'leases.db'), synchronous: 'NORMAL' });
  await createLeaseTable(database.db);
  const app = Fastify() as unknown as ZodApp;
  const order: string[] = [];
  const host = createFeatureHost({
    app,
    context: { label: 'ctx' },
    db: database.db,
    clock: new ManualClock(1_000),
    runJobs: false,
    closeShared: async () => {
      order.push('shared closed');
      await database.close();
    },
  });

  let releaseTick!: () => void;
  const first = await host.register(
    defineFeature<{ label: string }, { tick(): Promise<boolean> }>(
      'first',
      ({ app: scope, context, job, onClose }) => {
        scope.get('/first', async () => ({ from: context.label }));
        // A hook added by a shared feature applies to routes of features registered after it.
        scope.addHook('onRequest', async (_request, reply) => {
          void reply.header('x-first', 'seen');
        });
        scope.decorateRequest('firstSaw', false);
        const sweep = job({
          name: 'first.sweep',
          intervalMs: 60_000,
          run: () =>
            new Promise<void>((resolve) => {
              releaseTick = () => {
                order.push('first job finished');
                resolve();
              };
            }),
        });
        onClose(async () => {
          order.push('first closed');
        });
        return sweep;
      },
      { shared: true },
    ),
  );
  await host.register(
    defineFeature<{ label: string }>('second', ({ app: scope, onClose }) => {
      // Encapsulated (the default): this hook and decorator stay with the feature's own routes.
      scope.addHook('onRequest', async (_request, reply) => {
        void reply.header('x-second', 'seen');
      });
      scope.decorateRequest('secondSaw', false);
      scope.get('/second', async (request) => ({ ok: true, decorated: 'firstSaw' in request && 'secondSaw' in request }));
      onClose(async () => {
        order.push('second closed');
      });
    }),
  );
  await host.register(
    defineFeature<{ label: string }>('third', ({ app: scope }) => {
      scope.get('/third', async (request) => ({ sharedDecorator: 'firstSaw' in request, encapsulatedDecorator: 'secondSaw' in request }));
    }),
  );
  await app.ready();
  const second = await app.inject({ method: 'GET', url: '/second' });
  assert.equal(second.headers['x-first'], 'seen');
  assert.equal(second.headers['x-second'], 'seen', "an encapsulated feature's hook applies to its own routes");
  assert.deepEqual(second.json(), { ok: true, decorated: true });
  const third = await app.inject({ method: 'GET', url: '/third' });
  assert.equal(third.headers['x-first'], 'seen', "a shared feature's hook applies to every later feature's routes");
  assert.equal(third.headers['x-second'], undefined, "an encapsulated feature's hook does not leak to another feature's routes");
  assert.deepEqual(third.json(), { sharedDecorator: true, encapsulatedDecorator: false });
  const firstRoute = await app.inject({ method: 'GET', url: '/first' });
  assert.equal(firstRoute.headers['x-second'], undefined);
  assert.deepEqual((await app.inject({ method: 'GET', url: '/first' })).json(), { from: 'ctx' });

  // A tick in progress at shutdown: its feature's onClose waits for it.
  const ticking = first.tick();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const closing = app.close();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(order, ['second closed'], 'the later feature stops first; the first waits for its running tick');
  releaseTick();
  await closing;
  assert.equal(await ticking, true);
  assert.deepEqual(order, ['second closed', 'first job finished', 'first closed', 'shared closed']);
});
