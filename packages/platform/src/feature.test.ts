// The feature kit's promises, on a real Fastify app and a real database: features share the app's hooks, and shutdown stops each feature's running
// job and its own work before the shared resources close, features in reverse order.
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

test('features: hooks app-wide, and shutdown runs jobs, then onClose, per feature in reverse order, then the shared close', async (t) => {
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
    defineFeature<{ label: string }, { tick(): Promise<boolean> }>('first', ({ app: scope, context, job, onClose }) => {
      scope.get('/first', async () => ({ from: context.label }));
      // A hook added by a feature applies to routes of features registered after it.
      scope.addHook('onRequest', async (_request, reply) => {
        void reply.header('x-first', 'seen');
      });
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
    }),
  );
  await host.register(
    defineFeature<{ label: string }>('second', ({ app: scope, onClose }) => {
      scope.get('/second', async () => ({ ok: true }));
      onClose(async () => {
        order.push('second closed');
      });
    }),
  );
  await app.ready();
  const second = await app.inject({ method: 'GET', url: '/second' });
  assert.equal(second.headers['x-first'], 'seen');
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
