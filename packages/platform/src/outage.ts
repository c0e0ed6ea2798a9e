import type { FastifyBaseLogger } from 'fastify';

/** How often an outage's dependency is probed until it answers again. */
const PROBE_EVERY_MS = 1000;

/**
 * A dependency outage (the database) as the logs tell it: one line when the first request fails
 * for it, with the cause, and one when a probe finds it back, with how long it lasted and how many
 * requests failed; never a stack per request (an outage once logged 958 lines in 11 s).
 */
export class OutageLog {
  private since: number | null = null;
  private failures = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly dependency: string,
    /** Resolves once the dependency answers again. */
    private readonly probe: () => Promise<unknown>,
  ) {}

  /** A request failed because the dependency is unreachable. */
  failed(error: unknown): void {
    this.failures += 1;
    this.noticed(error);
  }

  /** Work other than a request (a background write) found the dependency unreachable. */
  noticed(error: unknown): void {
    if (this.since !== null) return;
    this.since = Date.now();
    const cause = causeOf(error);
    this.log.error(
      { dependency: this.dependency, cause },
      `${this.dependency} unavailable (${cause}): requests that need it are answered 503 until it is back`,
    );
    this.probeLater();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  private probeLater(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.probe().then(
        () => this.recovered(),
        () => this.probeLater(),
      );
    }, PROBE_EVERY_MS);
    this.timer.unref();
  }

  private recovered(): void {
    if (this.since === null || this.stopped) return;
    const seconds = Math.round((Date.now() - this.since) / 100) / 10;
    this.log.info(
      { dependency: this.dependency, outageSeconds: seconds, failedRequests: this.failures },
      `${this.dependency} available again after ${seconds} s; ${this.failures} requests failed meanwhile`,
    );
    this.since = null;
    this.failures = 0;
  }
}

/**
 * What went wrong, in one line: a connection refused to its address says so; Node's AggregateError
 * (every address of a host refused) carries an empty message and the causes inside.
 */
export function causeOf(error: unknown): string {
  const outer = error as { code?: unknown; message?: unknown; errors?: unknown };
  const inner = Array.isArray(outer.errors) && outer.errors.length > 0 ? (outer.errors[0] as { message?: unknown }) : outer;
  const message = typeof inner.message === 'string' && inner.message !== '' ? inner.message : typeof outer.message === 'string' ? outer.message : '';
  const code = typeof outer.code === 'string' ? outer.code : '';
  if (message === '') return code === '' ? String(error) : code;
  return code === '' || message.includes(code) ? message : `${code}: ${message}`;
}
