/**
 * Test support (`@vigil/cli/testing`): the real observe and gate services listening on ephemeral
 * local ports, each on a fresh SQLite database in a temporary directory, on the system clock.
 * Used by the SDK, MCP and example tests; not part of the SDK's runtime.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildGateService, gateConfigFromEnvironment, type GateService } from '@vigil/gate';
import { buildObserveService, observeConfigFromEnvironment, type ObserveService } from '@vigil/observe';
import { systemClock } from '@vigil/platform';
import { linkedServicesEnvironment } from './linked-services.ts';

// Real service processes and a failing TCP proxy, for the SDK's outage tests.
export { dropSchemas, firstObserveKey, newSchemaName, POSTGRES_URL, servicesSkipReason, ServiceProcess, tempDir } from './cluster.ts';
export { TcpProxy } from './tcp-proxy.ts';

export const TEST_GATE_ADMIN_KEY = 'gk_sdk_test_admin_key_0123456789';

export interface LiveServices {
  observeUrl: string;
  gateUrl: string;
  /** An observe API key (the first key, created over HTTP). */
  observeKey: string;
  /** The gate admin key (GATE_ADMIN_KEY). */
  gateAdminKey: string;
  observe: ObserveService;
  gate: GateService;
  /** Creates a gate API key over HTTP and answers its raw value. */
  gateKey(name: string, scopes: string[], rateLimit?: number | null): Promise<string>;
  close(): Promise<void>;
}

export interface LiveServicesOptions {
  observeEnv?: Record<string, string>;
  gateEnv?: Record<string, string>;
  /** Link the two as `vigil up` (`npm start`) does: the gate forwards request events to this observe, signed. */
  linked?: boolean;
}

/** `vigil up`'s environment for one service (the link secrets are kept in `dataDir`, so both get the same). */
function linkedEnvironment(env: Record<string, string>, dataDir: string): Record<string, string> {
  return linkedServicesEnvironment(env, dataDir) as Record<string, string>;
}

async function listen(app: ObserveService['app'] | GateService['app']): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export async function startLiveServices(options: LiveServicesOptions = {}): Promise<LiveServices> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-sdk-test-'));
  const cleanups: Array<() => Promise<void>> = [async () => rmSync(dataDir, { recursive: true, force: true })];
  const close = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const link = (env: Record<string, string>, observeUrl?: string) =>
      options.linked ? linkedEnvironment({ ...(observeUrl !== undefined && { OBSERVE_URL: observeUrl }), ...env }, dataDir) : env;
    const observeConfig = observeConfigFromEnvironment(link({ LOG_LEVEL: 'silent', ...options.observeEnv }), { dataDir });
    const observe = await buildObserveService(observeConfig, { clock: systemClock, runJobs: false, validateResponses: true });
    cleanups.push(() => observe.app.close());
    const observeUrl = await listen(observe.app);
    const keyResponse = await fetch(`${observeUrl}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'sdk-test' }),
    });
    if (keyResponse.status !== 201) throw new Error(`observe key creation failed: ${keyResponse.status} ${await keyResponse.text()}`);
    const observeKey = ((await keyResponse.json()) as { key: string }).key;

    const gateConfig = gateConfigFromEnvironment(link({ LOG_LEVEL: 'silent', GATE_ADMIN_KEY: TEST_GATE_ADMIN_KEY, ...options.gateEnv }, observeUrl), {
      dataDir,
    });
    const gate = await buildGateService(gateConfig, { clock: systemClock, runJobs: false, validateResponses: true });
    cleanups.push(() => gate.app.close());
    const gateUrl = await listen(gate.app);

    return {
      observeUrl,
      gateUrl,
      observeKey,
      gateAdminKey: TEST_GATE_ADMIN_KEY,
      observe,
      gate,
      async gateKey(name, scopes, rateLimit = null) {
        const response = await fetch(`${gateUrl}/api/api-keys`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_GATE_ADMIN_KEY}` },
          body: JSON.stringify({ name, scopes, rateLimit }),
        });
        if (response.status !== 201) throw new Error(`gate key creation failed: ${response.status} ${await response.text()}`);
        return ((await response.json()) as { key: string }).key;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Polls `probe` until it answers a value `accept` likes (or the deadline passes, then throws with the last value). */
export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await probe();
    if (accept(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A request as a recording test server received it (the shape of platform's TestHttpServer). */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/** Forwards a received request to `targetBase` and writes the answer to `res`: a proxy hop for fault-injection tests. */
export async function forwardTo(
  targetBase: string,
  request: ReceivedRequest,
  res: { writeHead(status: number, headers: Record<string, string>): unknown; end(body: string): unknown },
): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const answer = await fetch(`${targetBase}${request.url}`, {
    method: request.method,
    headers,
    body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body,
  });
  const text = await answer.text();
  const out: Record<string, string> = {};
  answer.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name) && name !== 'content-encoding') out[name] = value;
  });
  res.writeHead(answer.status, out);
  res.end(text);
}
