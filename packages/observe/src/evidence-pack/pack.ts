/**
 * An evidence pack's assembly (docs/audit.md, "Evidence packs"), its one home: reads the period's
 * evidence from the services (EVIDENCE_PARTS), renders each part, the report and the manifest of
 * their SHA-256 digests, and has each service sign the manifest's digest with its audit key
 * (POST /api/audit/evidence-signature). `vigil evidence` runs it against the services' URLs, and
 * POST /api/audit/evidence-pack (the dashboard's download) against this observe and its gate.
 */
import { createHash } from 'node:crypto';
import type { PackFile } from './container.ts';
import { EVIDENCE_PARTS, type EvidenceContext, type EvidencePart, type EvidenceService } from './parts.ts';
import { renderReport } from './report.ts';

export const MANIFEST_PATH = 'manifest.json';
export const SIGNATURES_PATH = 'signatures.json';
export const REPORT_PART = 'report';
export const partPath = (name: string): string => (name === REPORT_PART ? 'report.html' : `parts/${name}.json`);

export const sha256Hex = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A service the pack reads over HTTP, with `authorization` (a header value) on every call; a refusal is an Error naming the call. */
export function httpEvidenceService(name: 'observe' | 'gate', url: string, authorization: string | undefined): EvidenceService {
  const base = url.replace(/\/+$/, '');
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        ...(authorization !== undefined && { authorization }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (!response.ok) throw new EvidenceReadError(name, response.status, `${name}: ${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as unknown;
  };
  return { name, url: base, get: (path) => call('GET', path), post: (path, body) => call('POST', path, body) };
}

/** A service refused a read the pack needs (its status: 401/403 when the credential may not read it). */
export class EvidenceReadError extends Error {
  constructor(
    readonly service: 'observe' | 'gate',
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
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
