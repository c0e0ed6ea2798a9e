/**
 * `vigil verify`: checks an export bundle offline, or audits a whole audit log online — observe's
 * (sessions' events) or the gate's (requests' audit entries), told apart by the log's name
 * (docs/audit.md). Exit 0 valid, 1 tampered (each finding says what and where), 2 usage or
 * unreadable input, or a server that cannot be asked.
 */
import { existsSync, readFileSync } from 'node:fs';
import { decodeBase64 } from '@vigil/platform/audit-verify';
import { ApiClient, ApiError } from '../eval-gate-http.ts';
import { bundleKeyOf, checkConsistency, parseBundle, verifyBundle, type Bundle } from './bundle.ts';
import { checkpointSigned, GATE_PROFILE, keyIdOf, parseCheckpoint, parsePublicKey, profileOf, type Checkpoint, type LogProfile } from './checkpoint.ts';
import { InputError, isRecord, type Finding } from './input.ts';
import type { ChainedEvent } from './deep.ts';
import { RequestRowAudit } from './requests.ts';
import { LogWalk, type RecordedHead, type WalkedLeaf, type WalkedEventSink } from './walk.ts';

export const EXIT_VALID = 0;
export const EXIT_TAMPERED = 1;
export const EXIT_USAGE = 2;

const PAGE = 1000;
const REQUEST_TIMEOUT_MS = 30_000;

export interface VerifyOptions {
  checkpoint?: string;
  publicKey?: string;
  url?: string;
  deep?: boolean;
  json?: boolean;
}

export interface VerifyIo {
  out(text: string): void;
  err(text: string): void;
  /** Redraw a progress line on stderr (a terminal). */
  live: boolean;
}

interface Report {
  profile: LogProfile;
  valid: boolean;
  mode: 'bundle' | 'log';
  findings: Finding[];
  notes: string[];
  summary: string;
}

export async function runVerify(bundleFile: string | undefined, options: VerifyOptions, env: NodeJS.ProcessEnv, io: VerifyIo): Promise<number> {
  try {
    if (options.deep === true && bundleFile !== undefined) throw new InputError('--deep audits the whole log: use it with --url and no bundle');
    const client =
      options.url === undefined
        ? undefined
        : new ApiClient({ baseUrl: baseUrl(options.url), apiKey: env.VIGIL_API_KEY?.trim() || undefined, timeoutMs: REQUEST_TIMEOUT_MS });
    const trustedKey = options.publicKey === undefined ? undefined : readPublicKey(options.publicKey);
    const saved = options.checkpoint === undefined ? undefined : readSavedCheckpoint(options.checkpoint);
    let report: Report;
    if (bundleFile !== undefined) {
      report = await verifyBundleFile(bundleFile, trustedKey, saved, client);
    } else {
      if (client === undefined) throw new InputError('give a bundle file to verify, or --url to audit the whole log');
      report = await auditLog(client, trustedKey, saved, options.deep === true, io);
    }
    print(report, options.json === true, io);
    return report.valid ? EXIT_VALID : EXIT_TAMPERED;
  } catch (error) {
    // InputError and ApiError carry the whole story; anything else is still no verdict, never a stack trace.
    io.err(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_USAGE;
  }
}

function baseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InputError(`--url ${url} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new InputError(`--url ${url} is not an http(s) URL`);
  return url.replace(/\/+$/, '');
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function readJson(file: string, what: string): unknown {
  const text = readText(file, what);
  try {
    return JSON.parse(text);
  } catch {
    throw new InputError(`${what} ${file} is not JSON`);
  }
}

/** A saved checkpoint, and the log a witness message names (a bare checkpoint names none). */
interface SavedCheckpoint {
  checkpoint: Checkpoint;
  log: unknown;
  file: string;
}

/**
 * --checkpoint: what GET /api/audit/checkpoint answers, or what a witness received (a webhook body,
 * or one line of the witness file: {type: "audit.checkpoint", log, checkpoint, publicKey}).
 */
function readSavedCheckpoint(file: string): SavedCheckpoint {
  const what = `the saved checkpoint (${file})`;
  const value = readJson(file, 'the saved checkpoint');
  if (isRecord(value) && value.type === 'audit.checkpoint') return { checkpoint: parseCheckpoint(value.checkpoint, what), log: value.log, file };
  return { checkpoint: parseCheckpoint(value, what), log: undefined, file };
}

/** The saved checkpoint, when it is one of the log being verified (a witness message says which). */
function savedOf(saved: SavedCheckpoint | undefined, n: LogProfile): Checkpoint | undefined {
  if (saved === undefined) return undefined;
  if (saved.log !== undefined && saved.log !== n.log)
    throw new InputError(`the saved checkpoint (${saved.file}) is a checkpoint of the log "${String(saved.log)}", not "${n.log}"`);
  return saved.checkpoint;
}

/** --public-key: base64 of the raw key, a PEM, or a file holding either. */
function readPublicKey(value: string): Buffer {
  const looksLikeKey = value.trim().startsWith('-----BEGIN') || /^[A-Za-z0-9+/]{43}=$/.test(value.trim());
  if (!looksLikeKey && existsSync(value)) return parsePublicKey(readText(value, 'the public key file'), `the public key in ${value}`);
  return parsePublicKey(value, '--public-key');
}

function at(checkpoint: Checkpoint): string {
  return `the checkpoint at tree size ${checkpoint.treeSize}`;
}

/** The log's keys, keyId → raw key, and the log's name (which says whose log the server keeps). */
async function fetchKeys(client: ApiClient): Promise<{ log: unknown; keys: Map<string, Buffer> }> {
  const answer = await client.get<{ log?: unknown; keys?: { keyId: string; publicKey: string }[] }>('/api/audit/public-key');
  // A key not in canonical base64 of 32 bytes is left out: what it signed then counts as signed by an unknown key.
  const keys = (answer.keys ?? []).flatMap((key) => {
    const raw = decodeBase64(key.publicKey);
    return raw?.length === 32 ? [[key.keyId, raw] as const] : [];
  });
  return { log: answer.log, keys: new Map(keys) };
}

async function fetchConsistency(client: ApiClient, from: number, to: number): Promise<string[]> {
  try {
    return (await client.get<{ proof: string[] }>(`/api/audit/consistency?from=${from}&to=${to}`)).proof;
  } catch (error) {
    // The server cannot prove a size it no longer has: that is the log's fault, not the input's.
    if (error instanceof ApiError && error.status !== undefined && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 403)
      return [];
    throw error;
  }
}

async function verifyBundleFile(
  file: string,
  trustedKey: Buffer | undefined,
  savedFile: SavedCheckpoint | undefined,
  client: ApiClient | undefined,
): Promise<Report> {
  const bundle = parseBundle(readJson(file, 'the bundle'));
  const n = profileOf(bundle.log, 'the bundle');
  const saved = savedOf(savedFile, n);
  const { findings, notes, eventCount } = verifyBundle(bundle, trustedKey);
  if (saved !== undefined) findings.push(...(await compareWithSaved(bundle, saved, trustedKey, client)));
  const { checkpoint } = bundle;
  const summary =
    findings.length === 0
      ? `VALID: ${n.scope} ${bundle.sessionId}, ${eventCount} ${n.items} chained to its head and included in ${at(checkpoint)} (key ${checkpoint.keyId})${saved === undefined ? '' : `, consistent with the saved checkpoint at tree size ${saved.treeSize}`}`
      : `TAMPERED: ${n.scope} ${bundle.sessionId}: ${findings.length} finding${findings.length === 1 ? '' : 's'}`;
  return { profile: n, valid: findings.length === 0, mode: 'bundle', findings, notes, summary };
}

/** The saved checkpoint's signature, and its consistency with the bundle's checkpoint. */
async function compareWithSaved(bundle: Bundle, saved: Checkpoint, trustedKey: Buffer | undefined, client: ApiClient | undefined): Promise<Finding[]> {
  const findings: Finding[] = [];
  const bundleKey = bundleKeyOf(bundle);
  const known = trustedKey ?? bundleKey;
  let key = keyIdOf(known) === saved.keyId ? known : undefined;
  // Signed by another key (a rotation): the log's keys, when it can be asked.
  if (key === undefined && client !== undefined) key = (await fetchKeys(client)).keys.get(saved.keyId);
  if (key === undefined)
    throw new InputError(
      `the saved checkpoint was signed by key ${saved.keyId}, which is not ${trustedKey === undefined ? "the bundle's" : 'the given'} key: pass --url to look it up`,
    );
  if (!checkpointSigned(bundle.log, saved, key))
    findings.push({ check: 'saved-signature', message: `the saved checkpoint at tree size ${saved.treeSize} is not signed by key ${saved.keyId}` });

  const ours = bundle.checkpoint;
  let proof: string[] = [];
  if (saved.treeSize !== ours.treeSize) {
    const [from, to] = saved.treeSize < ours.treeSize ? [saved.treeSize, ours.treeSize] : [ours.treeSize, saved.treeSize];
    const carried = bundle.consistency;
    if (carried !== undefined && carried.from === from && carried.to === to) proof = carried.proof;
    else if (client !== undefined) proof = await fetchConsistency(client, from, to);
    else throw new InputError(`no consistency proof between tree sizes ${from} and ${to}: export the bundle with ?since=${from}, or pass --url`);
  }
  const inconsistent = checkConsistency(saved, ours, proof);
  if (inconsistent !== undefined) findings.push(inconsistent);
  return findings;
}

async function pages<T>(fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; next: string | null }>, each: (item: T) => void): Promise<void> {
  let cursor: string | undefined;
  for (;;) {
    const { items, next } = await fetchPage(cursor);
    items.forEach(each);
    if (next === null || items.length === 0) return;
    cursor = next;
  }
}

/** The whole-log audit: checkpoints, every leaf, every session's (request's) chain and head, no unlogged event (entry). */
async function auditLog(
  client: ApiClient,
  trustedKey: Buffer | undefined,
  savedFile: SavedCheckpoint | undefined,
  deep: boolean,
  io: VerifyIo,
): Promise<Report> {
  const findings: Finding[] = [];
  const notes: string[] = [];
  const { log, keys } = await fetchKeys(client);
  const n = profileOf(log, "the server's audit log (GET /api/audit/public-key)");
  if (deep && !n.deep)
    throw new InputError(
      `--deep recomputes the data observe derives from its events; the ${n.log} log has none (its chains are all there is to check): leave --deep out`,
    );
  const saved = savedOf(savedFile, n);
  if (trustedKey === undefined)
    notes.push(`the audit keys (${[...keys.keys()].join(', ')}) were taken from the server: pass --public-key to check them against a key you trust`);
  const keyFor = (checkpoint: Checkpoint): Buffer | undefined => (trustedKey === undefined ? keys.get(checkpoint.keyId) : trustedKey);

  let latest: Checkpoint | undefined;
  try {
    latest = parseCheckpoint(await client.get('/api/audit/checkpoint'), "the server's latest checkpoint");
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    if (saved === undefined) throw new InputError('the server has signed no checkpoint yet (POST /api/audit/checkpoint signs one)');
    // The log lost every checkpoint, while one was saved: walk it against the saved one.
    findings.push({
      check: 'consistency',
      message: `the server has no checkpoint, yet one at tree size ${saved.treeSize} was saved: the log lost its checkpoints`,
    });
    latest = saved;
  }
  const latestKey = keyFor(latest);
  if (latestKey === undefined || !checkpointSigned(n.log, latest, latestKey))
    findings.push({
      check: 'checkpoint-signature',
      message: `the latest checkpoint (tree size ${latest.treeSize}) is not signed by ${trustedKey === undefined ? `a key of the log (${latest.keyId})` : 'the given key'}`,
    });
  if (saved !== undefined) {
    const savedKey = keyFor(saved);
    if (savedKey === undefined || !checkpointSigned(n.log, saved, savedKey))
      findings.push({
        check: 'saved-signature',
        message: `the saved checkpoint at tree size ${saved.treeSize} is not signed by ${trustedKey === undefined ? `a key of the log (${saved.keyId})` : 'the given key'}`,
      });
    if (saved.treeSize > latest.treeSize)
      findings.push({
        check: 'consistency',
        message: `the saved checkpoint (tree size ${saved.treeSize}) is newer than the server's latest (${latest.treeSize}): the log lost checkpoints`,
      });
    const proof =
      saved.treeSize === latest.treeSize
        ? []
        : await fetchConsistency(client, Math.min(saved.treeSize, latest.treeSize), Math.max(saved.treeSize, latest.treeSize));
    const inconsistent = checkConsistency(saved, latest, proof);
    if (inconsistent !== undefined) findings.push(inconsistent);
  } else {
    notes.push('no saved checkpoint: a log rewritten as a whole and re-signed cannot be told apart (pass --checkpoint)');
  }

  // Heads first: every event committed before they are read has its leaf by the time the walk ends.
  const heads = new Map<string, RecordedHead>();
  await pages(
    async (after) => {
      const answer = await client.get<Record<string, unknown>>(
        `/api/audit/heads?limit=${PAGE}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`,
      );
      return { items: (answer[n.scopes] ?? []) as Record<string, unknown>[], next: answer.nextCursor as string | null };
    },
    (scope) => heads.set(scope[n.scopeField] as string, { headSeq: scope.headSeq as number, headHash: scope.headHash as string | null }),
  );

  // --deep: the derived data recomputed from every walked event (loads the observe package, so only then).
  const derived = deep ? new (await import('./deep.ts')).DerivedDataAudit() : undefined;
  // The gate's request rows, compared with the replay of their walked entries.
  const requestRows = n.log === GATE_PROFILE.log ? new RequestRowAudit() : undefined;
  const sink: WalkedEventSink | undefined =
    derived !== undefined
      ? (fields) => derived.add(fields as unknown as ChainedEvent)
      : requestRows === undefined
        ? undefined
        : (fields) => requestRows.add(fields);
  const walk = new LogWalk(
    saved === undefined ? [latest] : [latest, saved],
    heads,
    trustedKey === undefined ? keys : new Map([[keyIdOf(trustedKey), trustedKey]]),
    sink,
    n,
  );
  const progress = new ProgressLine(io);
  let from = 0;
  for (;;) {
    const answer = await client.get<{ treeSize: number; leaves: Record<string, unknown>[] }>(`/api/audit/leaves?from=${from}&limit=${PAGE}`);
    for (const leaf of answer.leaves) walk.add(walkedLeaf(leaf, n));
    progress.show(`walked ${walk.size} of ${answer.treeSize} leaves`);
    if (answer.leaves.length === 0 || walk.size >= answer.treeSize) break;
    from = (answer.leaves[answer.leaves.length - 1]!.index as number) + 1;
  }
  progress.done();
  const summary = walk.finish();
  findings.push(...walk.findings);

  await pages(
    async (cursor) => {
      const answer = await client.get<Record<string, unknown>>(
        `/api/audit/unlogged?limit=${PAGE}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      return { items: (answer[n.items] ?? []) as Record<string, unknown>[], next: answer.nextCursor as string | null };
    },
    (item) => {
      const [sessionId, seq, eventId] = [item[n.scopeField] as string, item.seq as number, item[n.itemField] as string];
      findings.push({
        check: 'unlogged',
        sessionId,
        seq,
        eventId,
        message: `${n.item} ${eventId} (${n.scope} ${sessionId}, seq ${seq}) is stored but has no leaf in the audit log: it was written outside the service`,
      });
    },
  );

  if (requestRows !== undefined) {
    progress.show("comparing the requests' rows with their logged entries");
    findings.push(...(await requestRows.finish((path) => client.get(path))));
    progress.done();
    if (requestRows.skipped > 0)
      notes.push(`${requestRows.skipped} ${n.scopes} were not compared with their rows: their head moved since the walk (or their chain has a finding)`);
  }

  if (derived !== undefined) {
    progress.show('comparing the stored derived data');
    for (const finding of await derived.finish((path) => client.get(path))) {
      findings.push({
        check: 'derived',
        message: finding.message,
        ...(finding.sessionId === undefined ? {} : { sessionId: finding.sessionId }),
        ...(finding.seq === undefined ? {} : { seq: finding.seq }),
        ...(finding.eventId === undefined ? {} : { eventId: finding.eventId }),
      });
    }
    progress.done();
    if (derived.skippedSessions > 0)
      notes.push(`--deep left out ${derived.skippedSessions} ${n.scopes} whose head moved since the walk (or whose chain has a finding)`);
  }

  if (summary.retained > 0) {
    const scopes = summary.retainedSessions.length > 10 ? `${summary.retainedSessions.slice(0, 10).join(', ')}, …` : summary.retainedSessions.join(', ');
    notes.push(
      `${summary.retained} logged ${n.items} were deleted by retention (${summary.tombstones} signed tombstone${summary.tombstones === 1 ? '' : 's'} account for them): ${summary.retainedSessions.length === 1 ? n.scope : n.scopes} ${scopes}`,
    );
  }
  const text =
    findings.length === 0
      ? `VALID: ${summary.leaves} leaves (${summary.events} ${n.items} in ${summary.sessions} ${n.scopes}${summary.retained > 0 ? `, ${summary.retained} removed by retention` : ''}) match ${at(latest)}${saved === undefined ? '' : `, consistent with the saved checkpoint at tree size ${saved.treeSize}`}`
      : `TAMPERED: ${findings.length} finding${findings.length === 1 ? '' : 's'} in a log of ${summary.leaves} leaves`;
  return { profile: n, valid: findings.length === 0, mode: 'log', findings, notes, summary: text };
}

/** A leaf as GET /api/audit/leaves answers it, under the log's names (`requestId`, `entryId`, `entry` on the gate). */
function walkedLeaf(leaf: Record<string, unknown>, n: LogProfile): WalkedLeaf {
  return {
    index: leaf.index as number,
    leafHash: leaf.leafHash as string,
    sessionId: leaf[n.scopeField] as string,
    eventId: leaf[n.itemField] as string | null,
    event: leaf[n.item] as string | null,
    tombstone: (leaf.tombstone ?? null) as WalkedLeaf['tombstone'],
  };
}

class ProgressLine {
  private shown = false;
  constructor(private readonly io: VerifyIo) {}

  show(text: string): void {
    if (!this.io.live) return;
    this.io.err(`\r\x1b[2K${text}`);
    this.shown = true;
  }

  done(): void {
    if (this.shown) this.io.err('\r\x1b[2K');
  }
}

export function findingLine(finding: Finding, n: LogProfile): string {
  const where = [
    finding.sessionId === undefined ? undefined : `${n.scope} ${finding.sessionId}`,
    finding.seq === undefined ? undefined : `seq ${finding.seq}`,
    finding.eventId === undefined ? undefined : `${n.item} ${finding.eventId}`,
    finding.leafIndex === undefined ? undefined : `leaf ${finding.leafIndex}`,
  ].filter((part) => part !== undefined);
  return `${finding.check}${where.length === 0 ? '' : ` [${where.join(', ')}]`}: ${finding.message}`;
}

/** A finding as --json prints it: where, under the log's names (`requestId`, `entryId` for the gate). */
function findingJson(finding: Finding, n: LogProfile): Record<string, unknown> {
  const { sessionId, eventId, ...rest } = finding;
  return { ...rest, ...(sessionId === undefined ? {} : { [n.scopeField]: sessionId }), ...(eventId === undefined ? {} : { [n.itemField]: eventId }) };
}

function print(report: Report, json: boolean, io: VerifyIo): void {
  const n = report.profile;
  if (json) {
    const findings = report.findings.map((finding) => findingJson(finding, n));
    io.out(`${JSON.stringify({ valid: report.valid, mode: report.mode, summary: report.summary, findings, notes: report.notes }, null, 2)}\n`);
    return;
  }
  for (const note of report.notes) io.err(`note: ${note}\n`);
  for (const finding of report.findings) io.out(`${findingLine(finding, n)}\n`);
  io.out(`${report.summary}\n`);
}
