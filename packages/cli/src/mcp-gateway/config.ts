/**
 * The `vigil mcp-gateway --config FILE` configuration: the upstream MCP servers (stdio commands or
 * Streamable HTTP URLs), the gate that decides every tool call, observe where calls are recorded,
 * and the agent the calls are made for. `${NAME}` in any string is replaced by the environment
 * variable NAME, so keys need not be written into the file.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const name = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - (at most 64)')
  .refine((value) => !value.includes('__'), 'must not contain "__" (it separates the server from the tool name)');

const stdioUpstream = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  })
  .strict();

const httpUpstream = z
  .object({
    url: z.url(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

const service = z.object({ url: z.url(), apiKey: z.string().min(1).optional() }).strict();
const seconds = (fallback: number, max: number) => z.number().positive().max(max).default(fallback);

export const gatewayConfigSchema = z
  .object({
    upstreams: z.record(name, z.union([stdioUpstream, httpUpstream])).refine((u) => Object.keys(u).length > 0, 'name at least one upstream MCP server'),
    gate: service.extend({
      /** The gate's receipt (audit) public key to trust, base64 of the raw Ed25519 key or a PEM (default: the key the gate serves). */
      publicKey: z.string().min(1).optional(),
    }),
    observe: service.optional(),
    /** Whose calls these are: the agent id of the observe session and of the gate requests' context. */
    agentId: z.string().min(1).max(256).default('mcp-gateway'),
    /** Where a human decides a request: `<dashboardUrl>/approvals/<id>` (default: the observe URL, which serves the dashboard). */
    dashboardUrl: z.url().optional(),
    approval: z
      .object({
        /** How long one tools/call waits for a human's decision before asking the client again. */
        waitSeconds: seconds(20, 600),
        /** The gate request expires after this long (it is never run after). */
        expiresInSeconds: seconds(900, 7 * 24 * 3600),
        /** HMAC key of the requestState the client echoes back (≥ 32 bytes; default: a random key per process). */
        stateKey: z.string().min(32).optional(),
      })
      .strict()
      .default({ waitSeconds: 20, expiresInSeconds: 900 }),
    timeouts: z
      .object({
        /** Connecting to an upstream and listing its tools. */
        connectSeconds: seconds(15, 600),
        /** One upstream tools/call. */
        callSeconds: seconds(60, 3600),
        /** One call to the gate or observe. */
        serviceSeconds: seconds(10, 600),
      })
      .strict()
      .default({ connectSeconds: 15, callSeconds: 60, serviceSeconds: 10 }),
  })
  .strict();

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type UpstreamConfig = GatewayConfig['upstreams'][string];

export class GatewayConfigError extends Error {}

/** Replaces `${NAME}` in every string of `value` by the environment variable (an unset one is an error). */
function expand(value: unknown, env: NodeJS.ProcessEnv, path: string): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
      const found = env[variable];
      if (found === undefined) throw new GatewayConfigError(`${path || 'config'}: environment variable ${variable} is not set`);
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => expand(item, env, `${path}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, expand(item, env, path ? `${path}.${key}` : key)]));
  }
  return value;
}

export function parseGatewayConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const parsed = gatewayConfigSchema.safeParse(expand(raw, env, ''));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new GatewayConfigError(`invalid gateway config:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

export function loadGatewayConfig(file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new GatewayConfigError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new GatewayConfigError(`${file} is not JSON: ${(error as Error).message}`);
  }
  return parseGatewayConfig(raw, env);
}
