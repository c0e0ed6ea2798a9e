import { ManualClock, type Clock } from '@vigil/platform';
import type { TestBackend } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildObserveService, type ObserveService } from './app.ts';
import { observeConfigFromEnvironment, type ObserveConfig } from './config.ts';
import type { EventRow, ObserveDatabase } from './schema.ts';

// Internals the cross-service tests of packages/cli drive directly (migrations under concurrency, alert ticks).
export { evaluateRules } from './alerts/evaluator.ts';
export { observeMigrations } from './migrations.ts';

export interface TestObserve {
  service: ObserveService;
  config: ObserveConfig;
  clock: ManualClock | Clock;
  /** Raw key of an API key created through the API. */
  key: string;
  /** Authenticated request through the real app. */
  call(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestObserveOptions {
  env?: Record<string, string>;
  clock?: Clock;
  createKey?: boolean;
  /** Share this database (another test instance's) instead of a fresh one. */
  database?: ObserveConfig['database'];
  /** Evaluate guardrails after each ingest commit, as production does (default false: tests drive the engine). */
  evaluateGuardrails?: boolean;
}

/** The real observe app on a fresh database of the given backend, with a first key created over HTTP. */
export async function startTestObserve(backend: TestBackend, options: TestObserveOptions = {}): Promise<TestObserve> {
  const { dataDir, ...fresh } = backend.freshDatabase();
  const base = observeConfigFromEnvironment({ LOG_LEVEL: 'silent', ...options.env }, { dataDir });
  const config: ObserveConfig = { ...base, database: options.database ?? fresh };
  const clock = options.clock ?? new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
  const service = await buildObserveService(config, { clock, runJobs: false, evaluateGuardrails: options.evaluateGuardrails ?? false });
  let key = '';
  if (options.createKey ?? true) {
    const response = await service.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'test' } });
    if (response.statusCode !== 201) throw new Error(`first key creation failed: ${response.body}`);
    key = (response.json() as { key: string }).key;
  }
  return {
    service,
    config,
    clock,
    key,
    call: (request) =>
      service.app.inject({ ...request, headers: { authorization: `Bearer ${key}`, ...request.headers } }),
    close: () => service.app.close(),
  };
}

/**
 * Tampering for tests: stores a copy of the event `sourceId` straight into the database, never
 * through ingest (so nothing links it into the chain or moves the session's head), with `changes`
 * applied over it: at least a new id, e.g. also a seq past the head or an existing seq.
 */
export async function insertEventCopy(database: ObserveDatabase, sourceId: string, changes: Partial<EventRow> & Pick<EventRow, 'id'>): Promise<EventRow> {
  const source = await database.db.selectFrom('events').selectAll().where('id', '=', sourceId).executeTakeFirstOrThrow();
  const row = { ...source, ...changes };
  await database.db.insertInto('events').values(row).execute();
  return row;
}
