// What observe's and the gate's builders (their app.ts) take alike: how a service is built (by the
// CLI with the defaults, by tests with their own clock, log sink and jobs), its migrated database,
// the HTTP kit's options that follow from its configuration, and the route of its OpenAPI document.
import type { Clock } from './clock.ts';
import type { ServiceBaseConfig } from './config.ts';
import { migrateToLatest, openDatabase, pingDatabase, type Database, type MigrationStep, type RawSqlTarget } from './db.ts';
import type { HttpKitOptions, ZodApp } from './http.ts';
import { VIGIL_VERSION } from './version.ts';

export interface ServiceBuildOptions {
  clock?: Clock;
  /** Where log lines go (default stdout): tests read them. */
  logStream?: NodeJS.WritableStream;
  /** Start background timers (default true); tests drive `jobs.*.tick()` themselves. */
  runJobs?: boolean;
  /** Check every 2xx JSON answer against its route's response schema (test kits; default false). */
  validateResponses?: boolean;
}

/** The service's database, migrated to its latest step before anything reads it. */
export async function openServiceDatabase<Schema>(config: ServiceBaseConfig, steps: Record<string, MigrationStep>): Promise<Database<Schema>> {
  const database = await openDatabase<Schema>(config.database);
  await migrateToLatest(database, steps);
  return database;
}

type ServiceHttpOptions = Pick<
  HttpKitOptions,
  'version' | 'logLevel' | 'logFormat' | 'timeouts' | 'databaseProbe' | 'logStream' | 'validateResponses' | 'replica'
>;

/** The HTTP kit's options a service takes from its configuration, its database and how it is built. */
export function serviceHttpOptions(
  config: ServiceBaseConfig,
  database: RawSqlTarget & Pick<Database<unknown>, 'replica'>,
  options: ServiceBuildOptions,
): ServiceHttpOptions {
  return {
    version: VIGIL_VERSION,
    logLevel: config.logLevel,
    logFormat: config.logFormat,
    timeouts: config.http,
    databaseProbe: () => pingDatabase(database),
    ...(options.logStream !== undefined && { logStream: options.logStream }),
    validateResponses: options.validateResponses ?? false,
    ...(database.replica !== undefined && { replica: database.replica }),
  };
}

/** GET /api/openapi.json, public like the schemas it describes: clients generate their types from it before holding a key. */
export function registerOpenApiRoute(app: ZodApp): void {
  app.get('/api/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());
}
