/**
 * A TCP proxy that can fail, for tests of dependency outages: the services reach PostgreSQL or
 * Redis through it, and a test cuts it (sockets reset or closed, new connections refused), turns
 * it into a black hole (connections accepted, nothing forwarded) and restores it, without touching
 * the real servers other tests share.
 */
import net, { type AddressInfo } from 'node:net';

export type ProxyMode = 'forward' | 'blackhole';

/** Forwards 127.0.0.1:<port> to a target; can be cut (sockets destroyed, port closed) and restored on the same port. */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  get url(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(mode: ProxyMode = 'forward'): Promise<this> {
    const server = net.createServer((client) => {
      this.track(client);
      if (mode === 'blackhole') {
        client.on('data', () => undefined); // accepted, read, never answered
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      this.track(upstream);
      const kill = () => {
        client.destroy();
        upstream.destroy();
      };
      for (const socket of [client, upstream]) socket.on('error', kill).on('close', kill);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
  }

  /** Every connection dropped (`reset`: TCP RST, `close`: FIN) and the port closed, so new connections are refused. */
  async cut(how: 'reset' | 'close'): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const socket of this.sockets) {
      if (how === 'reset') socket.resetAndDestroy();
      else socket.destroy();
    }
    await closed;
  }

  /** Listening again on the same port. */
  async restore(mode: ProxyMode = 'forward'): Promise<void> {
    if (this.server) await this.cut('close');
    await this.start(mode);
  }

  async stop(): Promise<void> {
    await this.cut('close');
  }
}
