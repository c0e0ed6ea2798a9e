/**
 * `vigil verify`: checks an export bundle offline, or audits a whole audit log online — observe's
 * (sessions' events) or the gate's (requests' audit entries), told apart by the log's name
 * (docs/audit.md). Exit 0 valid, 1 tampered (each finding says what and where), 2 usage or
 * unreadable input, or a server that cannot be asked, 3 no finding but no trusted key (the
 * signatures were checked only against keys the server or bundle names).
 *
 * Only pinned keys are trusted: the one given (--public-key) and the saved checkpoint's (its keyId
 * is a hash of the key, so the key it names is pinned by it), and the keys a trusted key certified
 * in the log (a key rotation). A key the server merely lists is one anybody who can write its
 * database can add.
 */
import { existsSync, readFileSync } from 'node:fs';
import { decodeBase64 } from '@vigil/platform/audit-verify';
import { ApiClient, ApiError } from '../eval-gate-http.ts';
import {
  bundleKeyOf,
  certificateInclusionFindings,
  checkConsistency,
  completenessFindings,
  parseBundle,
  verifyBundle,
  type Bundle,
  type BundleCertificate,
} from './bundle.ts';
import { checkpointSigned, GATE_PROFILE, keyIdOf, parseCheckpoint, parsePublicKey, profileOf, type Checkpoint, type LogProfile } from './checkpoint.ts';
import { InputError, isRecord, type Finding } from './input.ts';
import type { ChainedEvent } from './deep.ts';
import { RequestRowAudit } from './requests.ts';
import { parseWitnessPolicy, witnessPolicyFindings, type WitnessPolicy } from './witnesses.ts';
import { acceptErasures, erasedHash, type CarriedErasure } from './erasures.ts';
import { LogWalk, type RecordedHead, type WalkedLeaf, type WalkedEventSink } from './walk.ts';
import { certifiedKeys, listedKeys, type KeyCertificate, type ListedKeys } from './rotation.ts';

export const EXIT_VALID = 0;
export const EXIT_TAMPERED = 1;
export const EXIT_USAGE = 2;
export const EXIT_UNVERIFIED = 3;

const PAGE = 1000;
const REQUEST_TIMEOUT_MS = 30_000;

export interface VerifyOptions {
  checkpoint?: string;
  publicKey?: string;
  url?: string;
  deep?: boolean;
  json?: boolean;
  /** --witness (repeatable) and --min-witnesses: the witness policy (witnesses.ts). */
  witness?: string[];
  minWitnesses?: string;
}

export interface VerifyIo {
  out(text: string): void;
  err(text: string): void;
  /** Redraw a progress line on stderr (a terminal). */
  live: boolean;
}

/** `unwitnessed`: no finding in the log, but its checkpoint lacks the cosignatures --min-witnesses requires (exit 1). */
type Verdict = 'valid' | 'tampered' | 'unverified' | 'unwitnessed';

/** The earliest checkpoint the verdict rests on: what it proves reaches back to that tree size and time (docs/audit.md). */
interface Coverage {
  treeSize: number;
  timestamp: string;
  /** `saved`: a checkpoint saved or witnessed before (--checkpoint); otherwise only the server's (or bundle's) own. */
  source: 'saved' | 'latest' | 'bundle';
}

interface Report {
  profile: LogProfile;
  verdict: Verdict;
  mode: 'bundle' | 'log';
  findings: Finding[];
  notes: string[];
  summary: string;
  coverage: Coverage;
}

const EXIT_OF: Record<Verdict, number> = { valid: EXIT_VALID, tampered: EXIT_TAMPERED, unverified: EXIT_UNVERIFIED, unwitnessed: EXIT_TAMPERED };

/** No finding yet no trusted key: the summary says so before anything else. */
const UNVERIFIED_PREFIX = 'UNVERIFIED (no trusted key: signatures checked only against keys the server or bundle names)';

export async function runVerify(bundleFile: string | undefined, options: VerifyOptions, env: NodeJS.ProcessEnv, io: VerifyIo): Promise<number> {
  try {
    if (options.deep === true && bundleFile !== undefined) throw new InputError('--deep audits the whole log: use it with --url and no bundle');
    const client =
      options.url === undefined
        ? undefined
        : new ApiClient({ baseUrl: baseUrl(options.url), apiKey: env.VIGIL_API_KEY?.trim() || undefined, timeoutMs: REQUEST_TIMEOUT_MS });
    const givenKey = options.publicKey === undefined ? undefined : readPublicKey(options.publicKey);
    const saved = options.checkpoint === undefined ? undefined : readSavedCheckpoint(options.checkpoint);
    const policy = parseWitnessPolicy(options.witness, options.minWitnesses);
    if (policy !== undefined && client === undefined) throw new InputError('--witness checks the cosignatures the server stored: give --url');
    let report: Report;
    if (bundleFile !== undefined) {
      report = await verifyBundleFile(bundleFile, givenKey, saved, client);
    } else {
      if (client === undefined) throw new InputError('give a bundle file to verify, or --url to audit the whole log');
      report = await auditLog(client, givenKey, saved, options.deep === true, io);
    }
    if (policy !== undefined) report = await withWitnessPolicy(report, client!, policy, givenKey);
    print(report, options.json === true, io);
    return EXIT_OF[report.verdict];
  } catch (error) {
    // InputError and ApiError carry the whole story; anything else is still no verdict, never a stack trace.
    io.err(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_USAGE;
  }
}

/** The report with the witness policy's findings and note; a log otherwise found intact is `unwitnessed` when the policy fails. */
async function withWitnessPolicy(report: Report, client: ApiClient, policy: WitnessPolicy, givenKey: Buffer | undefined): Promise<Report> {
  const { findings, notes } = await witnessPolicyFindings(client, policy, givenKey);
  const merged = { ...report, findings: [...report.findings, ...findings], notes: [...report.notes, ...notes] };
  if (findings.length === 0 || report.verdict === 'tampered') return merged;
  return {
    ...merged,
    verdict: 'unwitnessed',
    summary: `NOT WITNESSED (${findings.length} witness-policy finding${findings.length === 1 ? '' : 's'}): ${report.summary}`,
  };
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

/** A saved checkpoint, and the log and key a witness message names (a bare checkpoint names neither). */
interface SavedCheckpoint {
  checkpoint: Checkpoint;
  log: unknown;
  publicKey: Buffer | undefined;
  file: string;
}

/**
 * --checkpoint: what GET /api/audit/checkpoint answers, or what a witness received (a webhook body,
 * or one line of the witness file: {type: "audit.checkpoint", log, checkpoint, publicKey}).
 */
function readSavedCheckpoint(file: string): SavedCheckpoint {
  const what = `the saved checkpoint (${file})`;
  const value = readJson(file, 'the saved checkpoint');
  if (isRecord(value) && value.type === 'audit.checkpoint') {
    const publicKey = typeof value.publicKey === 'string' ? decodeBase64(value.publicKey) : undefined;
    return { checkpoint: parseCheckpoint(value.checkpoint, what), log: value.log, publicKey: publicKey?.length === 32 ? publicKey : undefined, file };
  }
  return { checkpoint: parseCheckpoint(value, what), log: undefined, publicKey: undefined, file };
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

/** The keys the server lists (GET /api/audit/public-key), with their certificates and the log's name (rotation.ts listedKeys). */
async function fetchKeys(client: ApiClient): Promise<ListedKeys> {
  return listedKeys(await client.get<unknown>('/api/audit/public-key'));
}

/** A bundle's certificates as certifiedKeys takes them: the keys, and their certificates, by keyId. */
function certificatesOf(carried: readonly BundleCertificate[]): { keys: Map<string, Buffer>; certificates: Map<string, KeyCertificate> } {
  const keys = new Map<string, Buffer>();
  const certificates = new Map<string, KeyCertificate>();
  for (const { publicKey, leafIndex, body, signature } of carried) {
    keys.set(keyIdOf(publicKey), publicKey);
    certificates.set(keyIdOf(publicKey), { leafIndex, body, signature });
  }
  return { keys, certificates };
}

/**
 * The keys this verification trusts, by keyId: the given one, and the saved checkpoint's — found
 * among `candidates` (the witness message's key, the bundle's, the server's), pinned because its
 * keyId is a hash of it. Empty when neither was given.
 */
function trustedKeys(givenKey: Buffer | undefined, saved: SavedCheckpoint | undefined, candidates: readonly (Buffer | undefined)[]): Map<string, Buffer> {
  const trusted = new Map<string, Buffer>();
  if (givenKey !== undefined) trusted.set(keyIdOf(givenKey), givenKey);
  if (saved === undefined) return trusted;
  const pinned = [saved.publicKey, givenKey, ...candidates].find((key) => key !== undefined && keyIdOf(key) === saved.checkpoint.keyId);
  if (pinned !== undefined) trusted.set(saved.checkpoint.keyId, pinned);
  return trusted;
}

/** What no trusted key means, said plainly (a note of every such verdict; verifyBundle says it of a bundle's key). */
function untrustedNote(keys: readonly string[]): string {
  return `the signatures were NOT checked against a trusted key: only against the key${keys.length === 1 ? '' : 's'} ${keys.join(', ')} the server lists, which anyone who can write its database can add to; pass --public-key, or --checkpoint with a checkpoint saved or witnessed earlier`;
}

/** A checkpoint signed by a key that neither --public-key nor the saved checkpoint pins, nor a trusted key certified. */
function untrustedKeyFinding(what: string, checkpoint: Checkpoint): Finding {
  return {
    check: 'untrusted-key',
    message: `${what} (tree size ${checkpoint.treeSize}) is signed by key ${checkpoint.keyId}, which neither --public-key nor the saved checkpoint pins, nor a trusted key certified: a key the server or a bundle merely names is not trusted (after a rotation without AUDIT_PREVIOUS_SIGNING_KEY, pass the new key with --public-key)`,
  };
}

/**
 * A consistency proof between two sizes, or the finding why the server has none: it answers
 * `audit_log_incomplete` (409) when rows the proof needs were deleted, naming the leaf.
 */
async function fetchConsistency(client: ApiClient, from: number, to: number): Promise<string[] | Finding> {
  try {
    return (await client.get<{ proof: string[] }>(`/api/audit/consistency?from=${from}&to=${to}`)).proof;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === undefined || error.status < 400 || error.status >= 500 || error.status === 401 || error.status === 403)
      throw error;
    // The server cannot prove a size it no longer has: that is the log's fault, not the input's.
    const missingLeaf = /missing leaf (\d+)/.exec(error.message)?.[1];
    return {
      check: 'consistency',
      ...(missingLeaf === undefined ? {} : { leafIndex: Number(missingLeaf) }),
      message: `the server cannot prove tree size ${from} a prefix of tree size ${to}: ${error.message.replace(/^.*? answered \d+: /, '')}`,
    };
  }
}

/** The consistency of two checkpoints by the server's proof, or the finding why there is none. */
async function consistencyFinding(client: ApiClient, a: Checkpoint, b: Checkpoint): Promise<Finding | undefined> {
  const proof = a.treeSize === b.treeSize ? [] : await fetchConsistency(client, Math.min(a.treeSize, b.treeSize), Math.max(a.treeSize, b.treeSize));
  return Array.isArray(proof) ? checkConsistency(a, b, proof) : proof;
}

/** How far back the checkpoints of a verdict reach, said in its summary. */
/** The saved checkpoint when one was given, else the checkpoint this run checked against (`source`). */
function coverageOf(
  saved: { treeSize: number; timestamp: string } | undefined,
  checked: { treeSize: number; timestamp: string },
  source: 'latest' | 'bundle',
): Coverage {
  return saved === undefined
    ? { treeSize: checked.treeSize, timestamp: checked.timestamp, source }
    : { treeSize: saved.treeSize, timestamp: saved.timestamp, source: 'saved' };
}

/** Any finding is tampering; without one, the evidence is valid only when a trusted key signed it. */
function verdictOf(findings: readonly unknown[], pinned: boolean): Verdict {
  return findings.length > 0 ? 'tampered' : pinned ? 'valid' : 'unverified';
}

function coverageText(coverage: Coverage): string {
  return coverage.source === 'saved'
    ? `; evidence from the saved checkpoint at tree size ${coverage.treeSize} (${coverage.timestamp}) on`
    : `; no saved checkpoint: the evidence is the server's own signature, tree size ${coverage.treeSize} (${coverage.timestamp})`;
}

async function verifyBundleFile(
  file: string,
  givenKey: Buffer | undefined,
  savedFile: SavedCheckpoint | undefined,
  client: ApiClient | undefined,
): Promise<Report> {
  const bundle = parseBundle(readJson(file, 'the bundle'));
  const n = profileOf(bundle.log, 'the bundle');
  const saved = savedOf(savedFile, n);
  const bundleKey = bundleKeyOf(bundle);
  let trusted = trustedKeys(givenKey, savedFile, [bundleKey]);
  const notes: string[] = [];
  // The rotations the bundle carries: a key certified by a trusted one is trusted, offline too.
  const carried = certificatesOf(bundle.certificates);
  certifiedKeys(n.log, trusted, carried.keys, carried.certificates, notes);
  // Signed by another key (a rotation): the saved checkpoint's key among the log's, and the keys certified by a trusted one, when it can be asked.
  if (client !== undefined && ((saved !== undefined && !trusted.has(saved.keyId)) || (trusted.size > 0 && !trusted.has(keyIdOf(bundleKey))))) {
    const { keys, certificates } = await fetchKeys(client);
    trusted = trustedKeys(givenKey, savedFile, [bundleKey, ...keys.values()]);
    certifiedKeys(n.log, trusted, keys, certificates, notes);
  }
  if (saved !== undefined && !trusted.has(saved.keyId))
    throw new InputError(
      `the saved checkpoint was signed by key ${saved.keyId}, which is not ${givenKey === undefined ? "the bundle's" : 'the given'} key: pass --url to look it up`,
    );
  const pinned = trusted.size > 0;
  const checked = verifyBundle(bundle, trusted.get(keyIdOf(bundleKey)) ?? givenKey);
  const { findings, eventCount } = checked;
  notes.push(...checked.notes);
  findings.push(...certificateInclusionFindings(bundle));
  if (pinned && givenKey === undefined && !trusted.has(keyIdOf(bundleKey))) findings.push(untrustedKeyFinding("the bundle's checkpoint", bundle.checkpoint));
  if (saved !== undefined) {
    findings.push(...(await compareWithSaved(bundle, saved, trusted.get(saved.keyId)!, client)));
    const complete = completenessFindings(await withHeadsAt(bundle, saved.treeSize, client), saved, (keyId) =>
      pinned ? trusted.get(keyId) : keyId === keyIdOf(bundleKey) ? bundleKey : undefined,
    );
    findings.push(...complete.findings);
    notes.push(...complete.notes);
  }
  const { checkpoint } = bundle;
  const coverage = coverageOf(saved, checkpoint, 'bundle');
  const verdict = verdictOf(findings, pinned);
  const summary =
    verdict === 'tampered'
      ? `TAMPERED: ${n.scope} ${bundle.sessionId}: ${findings.length} finding${findings.length === 1 ? '' : 's'}`
      : `${verdict === 'valid' ? 'VALID' : UNVERIFIED_PREFIX}: ${n.scope} ${bundle.sessionId}, ${eventCount} ${n.items} chained to its head and included in ${at(checkpoint)} (key ${checkpoint.keyId})${saved === undefined ? '' : `, consistent with the saved checkpoint at tree size ${saved.treeSize}`}${coverageText(coverage)}`;
  return { profile: n, verdict, mode: 'bundle', findings, notes, summary, coverage };
}

/**
 * The bundle with the commitment of its scope's head at tree size `size` (docs/audit.md, "Session
 * heads"): its own, or, when it carries none for that size, the one the server's export answers
 * with `since` (with --url); as it is when neither has one (completenessFindings reports that).
 */
async function withHeadsAt(bundle: Bundle, size: number, client: ApiClient | undefined): Promise<Bundle> {
  if (bundle.heads?.treeSize === size || client === undefined) return bundle;
  const n = profileOf(bundle.log, 'the bundle');
  let fetched: Bundle;
  try {
    fetched = parseBundle(await client.get(`/api/audit/export?${n.scopeField}=${encodeURIComponent(bundle.sessionId)}&since=${size}`));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return bundle;
    throw error;
  }
  const sameCheckpoint = fetched.checkpoint.treeSize === bundle.checkpoint.treeSize && fetched.checkpoint.rootHash === bundle.checkpoint.rootHash;
  return {
    ...bundle,
    ...(fetched.heads === undefined ? {} : { heads: fetched.heads }),
    ...(sameCheckpoint ? { tombstones: fetched.tombstones } : {}),
  };
}

/** The saved checkpoint's signature by its (pinned) key, and its consistency with the bundle's checkpoint. */
async function compareWithSaved(bundle: Bundle, saved: Checkpoint, key: Buffer, client: ApiClient | undefined): Promise<Finding[]> {
  const findings: Finding[] = [];
  if (!checkpointSigned(bundle.log, saved, key))
    findings.push({ check: 'saved-signature', message: `the saved checkpoint at tree size ${saved.treeSize} is not signed by key ${saved.keyId}` });

  const ours = bundle.checkpoint;
  let proof: string[] = [];
  if (saved.treeSize !== ours.treeSize) {
    const [from, to] = saved.treeSize < ours.treeSize ? [saved.treeSize, ours.treeSize] : [ours.treeSize, saved.treeSize];
    const carried = bundle.consistency;
    if (carried !== undefined && carried.from === from && carried.to === to) proof = carried.proof;
    else if (client !== undefined) {
      const fetched = await fetchConsistency(client, from, to);
      if (!Array.isArray(fetched)) return [...findings, fetched];
      proof = fetched;
    } else throw new InputError(`no consistency proof between tree sizes ${from} and ${to}: export the bundle with ?since=${from}, or pass --url`);
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

/** The erasure leaves the server lists (none from a server of before erasure). */
async function fetchErasures(client: ApiClient): Promise<CarriedErasure[]> {
  try {
    return (await client.get<{ erasures: CarriedErasure[] }>('/api/audit/erasures')).erasures;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
}

/** The whole-log audit: checkpoints, every leaf, every session's (request's) chain and head, no unlogged event (entry). */
async function auditLog(client: ApiClient, givenKey: Buffer | undefined, savedFile: SavedCheckpoint | undefined, deep: boolean, io: VerifyIo): Promise<Report> {
  const findings: Finding[] = [];
  const notes: string[] = [];
  const { log, keys: listed, certificates } = await fetchKeys(client);
  const n = profileOf(log, "the server's audit log (GET /api/audit/public-key)");
  if (deep && !n.deep)
    throw new InputError(
      `--deep recomputes the data observe derives from its events; the ${n.log} log has none (its chains are all there is to check): leave --deep out`,
    );
  const saved = savedOf(savedFile, n);
  const trusted = trustedKeys(givenKey, savedFile, [...listed.values()]);
  const pinned = trusted.size > 0;
  const certificateLeaves = certifiedKeys(n.log, trusted, listed, certificates, notes);
  // Without a pinned key the signatures can only be checked against the server's word: the verdict says so.
  const signers = pinned ? trusted : listed;
  if (!pinned) notes.push(untrustedNote([...listed.keys()]));

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
  const latestKey = signers.get(latest.keyId);
  if (latestKey === undefined && pinned) findings.push(untrustedKeyFinding("the server's latest checkpoint", latest));
  else if (latestKey === undefined || !checkpointSigned(n.log, latest, latestKey))
    findings.push({
      check: 'checkpoint-signature',
      message: `the latest checkpoint (tree size ${latest.treeSize}) is not signed by ${latestKey === undefined ? `a key of the log (${latest.keyId})` : `key ${latest.keyId}`}`,
    });
  if (saved !== undefined) {
    const savedKey = signers.get(saved.keyId);
    if (savedKey === undefined || !checkpointSigned(n.log, saved, savedKey))
      findings.push({
        check: 'saved-signature',
        message: `the saved checkpoint at tree size ${saved.treeSize} is not signed by ${savedKey === undefined ? `a key of the log (${saved.keyId})` : `key ${saved.keyId}`}`,
      });
    if (saved.treeSize > latest.treeSize)
      findings.push({
        check: 'consistency',
        message: `the saved checkpoint (tree size ${saved.treeSize}) is newer than the server's latest (${latest.treeSize}): the log lost checkpoints`,
      });
    const inconsistent = await consistencyFinding(client, saved, latest);
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
  const deepModule = deep ? await import('./deep.ts') : undefined;
  const derived = deepModule === undefined ? undefined : new deepModule.DerivedDataAudit();
  // Erasures: the signed leaves that account for erased events (docs/guide/erasure.md), checked before the walk meets their events.
  const erasures = acceptErasures(n.log, await fetchErasures(client), signers);
  findings.push(...erasures.findings);
  const erasedColumns =
    deepModule === undefined || erasures.erased.size === 0
      ? new Map()
      : await deepModule.storedColumnsOf((path) => client.get(path), new Set(erasures.erased.keys()));
  // The gate's request rows, compared with the replay of their walked entries.
  const requestRows = n.log === GATE_PROFILE.log ? new RequestRowAudit(erasures.requests) : undefined;
  const sink: WalkedEventSink | undefined =
    derived !== undefined
      ? (fields) => derived.add(fields as unknown as ChainedEvent, erasedHash(fields, erasures.erased) === undefined ? undefined : erasedColumns.get(fields.id))
      : requestRows === undefined
        ? undefined
        : (fields) => requestRows.add(fields);
  const walk = new LogWalk(saved === undefined ? [latest] : [latest, saved], heads, signers, certificateLeaves, sink, n, erasures);
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

  // A change row without its leaf was written around the service, which logs every change it records.
  await pages(
    async (cursor) => {
      const answer = await client.get<{ changes?: Record<string, unknown>[]; nextCursor: string | null }>(
        `/api/audit/unlogged-changes?limit=${PAGE}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      return { items: answer.changes ?? [], next: answer.nextCursor };
    },
    (change) =>
      findings.push({
        check: 'change-unlogged',
        message: `change-log row ${String(change.changeId)} (${String(change.action)} ${String(change.resource)}${typeof change.resourceId === 'string' ? ` ${change.resourceId}` : ''}) is stored but has no leaf in the audit log: it was written outside the service`,
      }),
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

  if (summary.erased > 0) {
    const ids = [...new Set([...erasures.erased.values()].map((cover) => cover.erasureId))];
    notes.push(
      `${summary.erased} ${n.items} were erased (content replaced by a marker, hash and position kept) under signed erasure leaves: ${ids.join(', ')}`,
    );
  }
  if (summary.changes > 0) notes.push(`${summary.changes} leaves log administrative changes (GET /api/audit/changes), each checked against its stored row`);
  if (summary.retained > 0) {
    const scopes = summary.retainedSessions.length > 10 ? `${summary.retainedSessions.slice(0, 10).join(', ')}, …` : summary.retainedSessions.join(', ');
    notes.push(
      `${summary.retained} logged ${n.items} were deleted by retention (${summary.tombstones} signed tombstone${summary.tombstones === 1 ? '' : 's'} account for them): ${summary.retainedSessions.length === 1 ? n.scope : n.scopes} ${scopes}`,
    );
  }
  const coverage = coverageOf(saved, latest, 'latest');
  const verdict = verdictOf(findings, pinned);
  const text =
    verdict === 'tampered'
      ? `TAMPERED: ${findings.length} finding${findings.length === 1 ? '' : 's'} in a log of ${summary.leaves} leaves`
      : `${verdict === 'valid' ? 'VALID' : UNVERIFIED_PREFIX}: ${summary.leaves} leaves (${summary.events} ${n.items} in ${summary.sessions} ${n.scopes}${summary.retained > 0 ? `, ${summary.retained} removed by retention` : ''}) match ${at(latest)}${saved === undefined ? '' : `, consistent with the saved checkpoint at tree size ${saved.treeSize}`}${coverageText(coverage)}`;
  return { profile: n, verdict, mode: 'log', findings, notes, summary: text, coverage };
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
    ...(leaf.kind !== undefined && { kind: leaf.kind as string | null }),
    ...(leaf.change !== undefined && { change: leaf.change as string | null }),
    ...(leaf.writtenBy === undefined ? {} : { writtenBy: leaf.writtenBy as string | null }),
    ...(typeof leaf.heads === 'string' && { heads: leaf.heads }),
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
    const { verdict, mode, summary, notes, coverage } = report;
    io.out(`${JSON.stringify({ valid: verdict === 'valid', verdict, mode, summary, findings, notes, coverage }, null, 2)}\n`);
    return;
  }
  for (const note of report.notes) io.err(`note: ${note}\n`);
  for (const finding of report.findings) io.out(`${findingLine(finding, n)}\n`);
  io.out(`${report.summary}\n`);
}
