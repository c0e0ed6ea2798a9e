/**
 * `@vigil/sdk/node`: the SDK with what only Node (and Bun and Deno, which load node: modules)
 * offers. Importing it makes the ambient session follow async work through AsyncLocalStorage, and
 * its ObserveClient sends queued events when the process is about to exit.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setSessionScope } from './ambient.ts';
import { ObserveClient as CoreObserveClient, type ObserveClientOptions as CoreObserveClientOptions } from './observe.ts';
import type { VigilSession } from './session.ts';

export * from './index.ts';

const ambient = new AsyncLocalStorage<VigilSession>();
setSessionScope({
  current: () => ambient.getStore(),
  run: (session, fn) => ambient.run(session, fn),
});

export interface ObserveClientOptions extends CoreObserveClientOptions {
  /**
   * Send what is queued when the process is about to exit normally (`beforeExit`), and report
   * events a process.exit() cut off to onError (default true). A process killed with SIGKILL sends
   * nothing: call `await client.close()` in your SIGTERM/SIGINT handler.
   */
  flushOnExit?: boolean;
}

/** Clients with events queued, for the process's exit hooks (one pair, however many clients). */
const exiting = new Set<ObserveClient>();
let hooked = false;

function hookProcessExit(): void {
  if (hooked) return;
  hooked = true;
  // Sending keeps the event loop alive; beforeExit fires again afterwards, with nothing left to send.
  process.on('beforeExit', () => {
    for (const client of exiting) if (client.pendingEvents > 0) void client.flush().catch(() => undefined);
  });
  process.on('exit', () => {
    for (const client of exiting) client.discardPending('the process exited before they were sent');
  });
}

export class ObserveClient extends CoreObserveClient {
  private readonly flushOnExit: boolean;

  constructor(options: ObserveClientOptions = {}) {
    super(options);
    this.flushOnExit = options.flushOnExit ?? true;
    this.queue.keepsProcessAlive = !this.flushOnExit;
  }

  override track(...args: Parameters<CoreObserveClient['track']>): void {
    super.track(...args);
    if (this.flushOnExit && !exiting.has(this)) {
      hookProcessExit();
      exiting.add(this);
    }
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      exiting.delete(this);
    }
  }
}
