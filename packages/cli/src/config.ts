// The services' configuration alone (./config), not their entries: checking the environment of
// `vigil gate` does not load observe's code, nor the reverse.
import { gateConfig, gateEnvironment, type GateConfig } from '@vigil/gate/config';
import { observeConfig, observeEnvironment, type ObserveConfig } from '@vigil/observe/config';
import { mergeSlices, parseEnvironment, sharedEnvironment } from '@vigil/platform';

/**
 * Every environment variable Vigil reads, in one schema: the shared settings and each service's
 * own. Every start checks all of it, so `vigil up` (or `vigil observe` alone) reports every bad
 * variable at once. docs/deploy.md lists them all (config.test.ts).
 */
export const vigilEnvironment = mergeSlices(sharedEnvironment, mergeSlices(observeEnvironment, gateEnvironment));

export interface ServiceOverrides {
  port?: number;
  dataDir?: string;
}

export function loadObserveConfig(env: NodeJS.ProcessEnv, overrides: ServiceOverrides = {}): ObserveConfig {
  return observeConfig(parseEnvironment(vigilEnvironment, env), overrides);
}

export function loadGateConfig(env: NodeJS.ProcessEnv, overrides: ServiceOverrides = {}): GateConfig {
  return gateConfig(parseEnvironment(vigilEnvironment, env), overrides);
}
