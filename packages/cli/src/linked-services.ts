import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { localAddress, readOrCreateSecretFile } from '@vigil/platform';

/** In the data directory: the secrets `vigil up` connects its two services with. */
export const LINK_SECRETS_FILE = 'service-link.json';

interface LinkSecrets {
  /** Signs the gate's request events forwarded to observe (gate OBSERVE_WEBHOOK_SECRET = observe APPROVAL_GATE_WEBHOOK_SECRET). */
  forwardingSecret: string;
  /** The gate's bearer token for observe's guardrail-breach endpoint (INTERNAL_SERVICE_TOKEN of both). */
  serviceToken: string;
}

/**
 * The environment `vigil up` runs both services with: what the user set, plus what makes them one
 * product — the gate forwards request events to observe (approvals of a request naming a session
 * join its timeline) and reports policy denies to observe's guardrail-breach endpoint. The
 * secrets are created once in the data directory (mode 0600), so restarts keep them; a variable
 * the user set always wins (several machines share one set through the environment, docs/deploy.md).
 */
export function linkedServicesEnvironment(env: NodeJS.ProcessEnv, dataDir: string): NodeJS.ProcessEnv {
  const text = readOrCreateSecretFile(join(resolve(dataDir), LINK_SECRETS_FILE), () =>
    JSON.stringify({ forwardingSecret: randomBytes(32).toString('hex'), serviceToken: randomBytes(32).toString('hex') } satisfies LinkSecrets),
  );
  const secrets = JSON.parse(text) as LinkSecrets;
  const forwardingSecret = env.OBSERVE_WEBHOOK_SECRET || env.APPROVAL_GATE_WEBHOOK_SECRET || secrets.forwardingSecret;
  return {
    ...env,
    OBSERVE_URL: env.OBSERVE_URL || `http://${localAddress(env.HOST || '127.0.0.1')}:${env.OBSERVE_PORT || 3400}`,
    OBSERVE_WEBHOOK_SECRET: forwardingSecret,
    APPROVAL_GATE_WEBHOOK_SECRET: forwardingSecret,
    INTERNAL_SERVICE_TOKEN: env.INTERNAL_SERVICE_TOKEN || secrets.serviceToken,
  };
}
