/** `vigil mcp-gateway --config FILE [--http PORT]`: runs the gateway until the client or a signal ends it. */
import { GatewayConfigError, loadGatewayConfig } from './config.ts';
import { Gateway } from './gateway.ts';
import { serveGatewayHttp, serveGatewayStdio } from './serve.ts';

export interface McpGatewayOptions {
  config: string;
  http?: number;
  host?: string;
}

export async function runMcpGateway(options: McpGatewayOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let gateway: Gateway;
  try {
    gateway = new Gateway(loadGatewayConfig(options.config, env));
  } catch (error) {
    if (!(error instanceof GatewayConfigError)) throw error;
    process.stderr.write(`vigil mcp-gateway: ${error.message}\n`);
    process.exit(2);
  }
  const { config } = gateway;
  const upstreams = Object.keys(config.upstreams).join(', ');
  const observed = config.observe ? `observe ${config.observe.url}` : 'no observe configured: calls are not recorded';
  let stop: () => Promise<void>;
  if (options.http !== undefined) {
    const server = await serveGatewayHttp(gateway, { port: options.http, host: options.host, token: env.VIGIL_GATEWAY_TOKEN?.trim() || undefined });
    process.stderr.write(`vigil mcp-gateway: serving ${server.url} (upstreams ${upstreams}; gate ${config.gate.url}; ${observed})\n`);
    stop = () => server.close();
  } else {
    const served = serveGatewayStdio(gateway);
    process.stderr.write(`vigil mcp-gateway: serving on stdio (upstreams ${upstreams}; gate ${config.gate.url}; ${observed})\n`);
    stop = () => served.close();
    void served.closed.then(async () => {
      await gateway.close();
      process.exit(0);
    });
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(
      signal,
      () =>
        void stop().finally(async () => {
          await gateway.close();
          process.exit(0);
        }),
    );
  }
}
