/**
 * `vigil evidence`: reads the period's evidence from the services (EVIDENCE_PARTS), writes each
 * part, the report and the manifest of their SHA-256 digests, and has each service sign the
 * manifest's digest with its audit key (POST /api/audit/evidence-signature). docs/audit.md.
 */
import { writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { writeContainer, type PackFile } from './container.ts';
import { EVIDENCE_PARTS, type EvidenceContext, type EvidencePart, type EvidenceService } from './parts.ts';
import { renderReport } from './report.ts';

export interface EvidenceOptions {
  from: string;
  to: string;
  agent?: string[];
  out: string;
  url?: string;
  gateUrl?: string;
  intervalMs?: string;
}

export const MANIFEST_PATH = 'manifest.json';
export const SIGNATURES_PATH = 'signatures.json';
export const REPORT_PART = 'report';
export const partPath = (name: string): string => (name === REPORT_PART ? 'report.html' : `parts/${name}.json`);

export const sha256Hex = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

export class EvidenceUsageError extends Error {}

function service(name: 'observe' | 'gate', url: string, apiKey: string | undefined): EvidenceService {
  const base = url.replace(/\/+$/, '');
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        ...(apiKey !== undefined && { authorization: `Bearer ${apiKey}` }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${name}: ${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as unknown;
  };
  return { name, url: base, get: (path) => call('GET', path), post: (path, body) => call('POST', path, body) };
}

function isoOf(value: string, flag: string): string {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw new EvidenceUsageError(`${flag} ${value} is not an ISO 8601 timestamp`);
  return new Date(ms).toISOString();
}

/** Builds the pack's files (manifest, parts, report, signatures) from the services. */
export async function buildEvidence(
  context: Omit<EvidenceContext, 'built'>,
  parts: readonly EvidencePart[] = EVIDENCE_PARTS,
  now: () => Date = () => new Date(),
): Promise<PackFile[]> {
  const built = new Map<string, unknown>();
  const files: PackFile[] = [];
  const rendered: { part: EvidencePart; data: unknown; sha256: string }[] = [];
  for (const part of parts) {
    const data = await part.build({ ...context, built });
    built.set(part.name, data);
    const content = `${JSON.stringify(data, null, 1)}\n`;
    const sha256 = sha256Hex(Buffer.from(content, 'utf8'));
    files.push({ path: partPath(part.name), content });
    rendered.push({ part, data, sha256 });
  }
  const head = { period: { from: context.from, to: context.to }, agents: [...context.agents], createdAt: now().toISOString() };
  files.push({ path: partPath(REPORT_PART), content: renderReport(head, rendered) });
  const services = Object.fromEntries(
    [context.observe, context.gate].filter((s): s is EvidenceService => s !== undefined).map((s) => [s.name, { url: s.url }]),
  );
  const manifest = {
    format: 'vigil-evidence',
    v: 1,
    ...head,
    intervalMs: context.intervalMs,
    services,
    parts: [...parts.map((part) => part.name), REPORT_PART].map((name, i) => {
      const bytes = Buffer.from(files[i]!.content, 'utf8');
      return { name, path: partPath(name), sha256: sha256Hex(bytes), bytes: bytes.length };
    }),
  };
  const manifestText = `${JSON.stringify(manifest, null, 1)}\n`;
  const manifestSha256 = sha256Hex(Buffer.from(manifestText, 'utf8'));
  const signatures = [];
  for (const signer of [context.observe, context.gate]) {
    if (signer !== undefined) signatures.push(await signer.post('/api/audit/evidence-signature', { manifestSha256 }));
  }
  return [
    { path: MANIFEST_PATH, content: manifestText },
    ...files,
    { path: SIGNATURES_PATH, content: `${JSON.stringify({ manifestSha256, signatures }, null, 1)}\n` },
  ];
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
      observe: options.url === undefined ? undefined : service('observe', options.url, env.VIGIL_API_KEY?.trim() || undefined),
      gate: options.gateUrl === undefined ? undefined : service('gate', options.gateUrl, env.VIGIL_GATE_API_KEY?.trim() || undefined),
    });
    writeFileSync(options.out, writeContainer(files));
    io.out(`evidence pack written: ${options.out} (${files.length} files, ${from} to ${to})\n`);
    return 0;
  } catch (error) {
    io.err(`vigil evidence: ${(error as Error).message}\n`);
    return error instanceof EvidenceUsageError ? 2 : 1;
  }
}
