/**
 * `vigil evidence`: builds an evidence pack from the services at the given URLs with observe's
 * evidence assembly (@vigil/observe: buildEvidence, the one the dashboard's download runs too) and
 * writes it. docs/audit.md, "Evidence packs".
 */
import { writeFileSync } from 'node:fs';
import { buildEvidence, httpEvidenceService, writeContainer } from '@vigil/observe';

export interface EvidenceOptions {
  from: string;
  to: string;
  agent?: string[];
  out: string;
  url?: string;
  gateUrl?: string;
  intervalMs?: string;
}

export class EvidenceUsageError extends Error {}

const bearer = (key: string | undefined) => (key?.trim() ? `Bearer ${key.trim()}` : undefined);

function isoOf(value: string, flag: string): string {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw new EvidenceUsageError(`${flag} ${value} is not an ISO 8601 timestamp`);
  return new Date(ms).toISOString();
}

/** The command: exit 0 written, 2 usage, 1 a service refused or could not be read. */
export async function runEvidence(options: EvidenceOptions, env: NodeJS.ProcessEnv, io: { out(text: string): void; err(text: string): void }): Promise<number> {
  try {
    if (options.url === undefined && options.gateUrl === undefined) throw new EvidenceUsageError('give --url (observe) and/or --gate-url (the gate)');
    const intervalMs = options.intervalMs === undefined ? 60_000 : Number(options.intervalMs);
    if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0) throw new EvidenceUsageError('--interval-ms must be a positive integer');
    const from = isoOf(options.from, '--from');
    const to = isoOf(options.to, '--to');
    if (Date.parse(from) > Date.parse(to)) throw new EvidenceUsageError('--from is after --to');
    const files = await buildEvidence({
      from,
      to,
      agents: options.agent ?? [],
      intervalMs,
      observe: options.url === undefined ? undefined : httpEvidenceService('observe', options.url, bearer(env.VIGIL_API_KEY)),
      gate: options.gateUrl === undefined ? undefined : httpEvidenceService('gate', options.gateUrl, bearer(env.VIGIL_GATE_API_KEY)),
    });
    writeFileSync(options.out, writeContainer(files));
    io.out(`evidence pack written: ${options.out} (${files.length} files, ${from} to ${to})\n`);
    return 0;
  } catch (error) {
    io.err(`vigil evidence: ${(error as Error).message}\n`);
    return error instanceof EvidenceUsageError ? 2 : 1;
  }
}
