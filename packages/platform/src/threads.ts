import { parentPort, Worker, type ResourceLimits, type Transferable, type WorkerOptions } from 'node:worker_threads';

/** In the compiled bundle (packages/cli/build.mjs): each thread script's compiled file, relative to its source folder. */
declare const VIGIL_COMPILED_THREADS: Record<string, string> | undefined;

/**
 * Starts the worker-thread script at `script` (a `*-thread.ts` beside the module that starts it,
 * `new URL('./x-thread.ts', import.meta.url)`): compiled in the bundle, else the TypeScript source
 * run through tsx.
 */
function startThread(script: URL, options: WorkerOptions): Worker {
  const name = script.pathname.slice(script.pathname.lastIndexOf('/') + 1).replace(/\.ts$/, '');
  const compiled = typeof VIGIL_COMPILED_THREADS === 'undefined' ? undefined : VIGIL_COMPILED_THREADS[name];
  if (compiled !== undefined) return new Worker(new URL(compiled, script), options);
  // From TypeScript sources a thread does not inherit the loader this process registered: it registers tsx itself.
  const loader = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(script.href)}); })`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}

/** A request to a thread served by serveThreadRequests, and its answer: the handler's result, or the message of what it threw. */
interface ThreadRequest<Request> {
  id: number;
  request: Request;
}
type ThreadReply<Result> = { id: number; result: Result } | { id: number; error: string };
/** Sent once by serveThreadRequests when the thread's script has loaded and serves. */
interface ThreadReady {
  ready: true;
}

/**
 * In a thread script: answers every request of its ThreadClient with `handle`'s result, one request
 * at a time in the order they came (an async handler finishes before the next starts). `transfer`
 * names the result's buffers to move rather than copy.
 */
export function serveThreadRequests<Request, Result>(
  handle: (request: Request) => Result | Promise<Result>,
  transfer?: (result: Result) => Transferable[],
): void {
  const port = parentPort;
  if (port === null) throw new Error('serveThreadRequests runs in a worker thread');
  let turn: Promise<void> = Promise.resolve();
  port.on('message', ({ id, request }: ThreadRequest<Request>) => {
    turn = turn.then(async () => {
      try {
        const result = await handle(request);
        port.postMessage({ id, result } satisfies ThreadReply<Result>, transfer?.(result));
      } catch (error) {
        port.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies ThreadReply<Result>);
      }
    });
  });
  port.postMessage({ ready: true } satisfies ThreadReady);
}

/** What the thread's handler threw (its message), as against the thread itself being lost or closed. */
export class ThreadRequestError extends Error {}

export interface ThreadClientOptions {
  /** Names the thread in errors: "the <name> thread exited with code 1". */
  name: string;
  workerData?: unknown;
  resourceLimits?: ResourceLimits;
  /** A thread left without requests this long is ended (its memory returned); the next request starts another. */
  idleMs: number;
  /** A request not answered in this long (from when its thread runs) fails and the thread is ended. Unset: no limit. */
  timeoutMs?: number;
  /** At most this many requests with the thread at once; later callers wait their turn. Unset: no limit. */
  maxInFlight?: number;
}

/**
 * The serving side of a request/reply worker thread (its script calls serveThreadRequests). The
 * thread starts on the first request and ends after `idleMs` without one. If it fails, exits or does
 * not answer in time, the requests with it fail and the next request starts a new thread; a request
 * the handler refused fails with ThreadRequestError. close() ends it for good. An idle thread does
 * not keep the process alive.
 */
export class ThreadClient<Request, Result> {
  private thread: Worker | null = null;
  /** Resolved when a thread's script has loaded and serves (ThreadReady). */
  private readonly ready = new WeakMap<Worker, Promise<void>>();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(result: Result): void; reject(error: Error): void }>();
  private readonly waiting: (() => void)[] = [];
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly script: URL,
    private readonly options: ThreadClientOptions,
  ) {}

  async ask(request: Request): Promise<Result> {
    const limit = this.options.maxInFlight ?? Infinity;
    while (!this.closed && this.pending.size >= limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.closed) throw new Error(`the ${this.options.name} thread is closed`);
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    const thread = this.running();
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<Result>((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        const { timeoutMs } = this.options;
        // Counted from when the thread serves: loading its script is not the request's time.
        if (timeoutMs !== undefined)
          void this.ready.get(thread)!.then(() => {
            if (this.pending.has(id))
              timer = setTimeout(() => this.lose(thread, `the ${this.options.name} thread did not answer in ${timeoutMs / 1000} s`), timeoutMs);
          });
        thread.postMessage({ id, request } satisfies ThreadRequest<Request>);
      });
    } finally {
      clearTimeout(timer);
      this.pending.delete(id);
      this.waiting.shift()?.();
      if (this.pending.size === 0 && this.waiting.length === 0) this.idleSoon();
    }
  }

  /** Ends the thread for good: requests with it or waiting fail, and so does any later one. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    for (const resolve of this.waiting.splice(0)) resolve();
    const thread = this.thread;
    if (thread === null) return;
    this.lose(thread, `the ${this.options.name} thread was closed`);
    await thread.terminate();
  }

  private idleSoon(): void {
    if (this.closed) return;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      const thread = this.thread;
      if (thread === null || this.pending.size > 0) return;
      this.thread = null;
      void thread.terminate();
    }, this.options.idleMs);
    this.idleTimer.unref();
  }

  private running(): Worker {
    if (this.thread !== null) return this.thread;
    const { name, workerData, resourceLimits } = this.options;
    const thread = startThread(this.script, { workerData, ...(resourceLimits && { resourceLimits }) });
    thread.unref();
    let serving!: () => void;
    this.ready.set(thread, new Promise<void>((resolve) => (serving = resolve)));
    thread.on('message', (reply: ThreadReply<Result> | ThreadReady) => {
      if ('ready' in reply) return serving();
      const request = this.pending.get(reply.id);
      if (request === undefined) return;
      if ('error' in reply) request.reject(new ThreadRequestError(reply.error));
      else request.resolve(reply.result);
    });
    thread.on('error', (error) => this.lose(thread, `the ${name} thread failed: ${error.message}`));
    thread.on('exit', (code) => this.lose(thread, `the ${name} thread exited with code ${code}`));
    this.thread = thread;
    return thread;
  }

  /** `thread` was lost (or is being closed): the requests with it fail, and it is ended (the next request starts another). */
  private lose(thread: Worker, reason: string): void {
    if (this.thread !== thread) return;
    this.thread = null;
    for (const request of this.pending.values()) request.reject(new Error(reason));
    this.pending.clear();
    void thread.terminate();
  }
}
