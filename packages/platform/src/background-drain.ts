/**
 * Work a commit starts without making its request wait: kick() runs `drain` in the background, and
 * a kick while it runs makes it go once more when it is done (never two at once), so a burst of
 * commits costs one extra drain, not one each. The periodic job stays the backstop of every kick.
 */
export class BackgroundDrain {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly drain: () => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Starts a drain, or asks the running one to go again. Never awaited. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.drain();
      } while (this.again && !this.stopped);
    })()
      .catch(this.onError)
      .finally(() => {
        this.running = null;
      });
  }

  /** No more kicks; waits for the drain in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
