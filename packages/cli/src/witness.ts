/**
 * `vigil witness`: a witness of transparency logs speaking c2sp.org/tlog-witness (docs/witness.md).
 * It follows the logs of its configuration (origin and note verifier key), keeps the last
 * checkpoint it cosigned of each (a JSON file in its data directory, replaced atomically), and at
 * POST /add-checkpoint verifies the log's signature and the consistency proof from that checkpoint
 * before it cosigns (tlog-cosignature v1) and records the new one. One request at a time: the check
 * of the old size and the write of the new checkpoint are one step, so no race rolls a log back.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import {
  cosign,
  decodeBase64,
  formatSignatureLine,
  formatVerifierKey,
  isKeyName,
  NOTE_COSIGNATURE_V1,
  NOTE_ED25519,
  parseCheckpointBody,
  parseNote,
  parseSigningKey,
  parseVerifierKey,
  sameKey,
  verifyConsistency,
  verifyNoteSignature,
  type NoteKey,
  type SigningKey,
} from '@vigil/platform/audit-verify';

/** The witness's key, created in its data directory at first start (PKCS#8 PEM, mode 0600). */
export const WITNESS_KEY_FILE = 'witness-signing-key.pem';
/** The last cosigned checkpoint of each log, by origin. */
export const WITNESS_STATE_FILE = 'witness-state.json';
/** tlog-witness: at most 63 proof lines; a note of a few signatures. */
const MAX_BODY_BYTES = 64 * 1024;
const MAX_PROOF_LINES = 63;

export interface WitnessConfig {
  /** The witness's key name (its cosignatures' name; a schema-less URL is recommended). */
  name: string;
  /** The logs followed: each origin with the verifier key(s) of its checkpoint signatures. */
  logs: { origin: string; keys: NoteKey[] }[];
}

interface LogState {
  size: number;
  /** Base64 of the root hash of the last cosigned checkpoint. */
  rootHash: string;
}

/** The configuration file: {"name": "...", "logs": [{"origin": "...", "key": "<vkey>" | "keys": ["<vkey>", ...]}]}. */
export function parseWitnessConfig(text: string, file: string): WitnessConfig {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON`);
  }
  const config = value as { name?: unknown; logs?: unknown };
  if (typeof config.name !== 'string' || !isKeyName(config.name)) throw new Error(`${file}: "name" must be a note key name (non-empty, no spaces, no "+")`);
  if (!Array.isArray(config.logs) || config.logs.length === 0) throw new Error(`${file}: "logs" must list the logs followed`);
  const logs = config.logs.map((entry: { origin?: unknown; key?: unknown; keys?: unknown }, i) => {
    if (typeof entry.origin !== 'string' || entry.origin === '' || entry.origin.includes('\n')) throw new Error(`${file}: logs[${i}].origin must be one line`);
    const texts = entry.keys ?? (entry.key === undefined ? [] : [entry.key]);
    if (!Array.isArray(texts) || texts.length === 0 || !texts.every((key) => typeof key === 'string'))
      throw new Error(`${file}: logs[${i}] needs "key" (a verifier key) or "keys"`);
    const keys = texts.map((key: string) => {
      const parsed = parseVerifierKey(key);
      if (parsed.type !== NOTE_ED25519) throw new Error(`${file}: logs[${i}]: ${key} is not an Ed25519 note key (type 1)`);
      return parsed;
    });
    return { origin: entry.origin, keys };
  });
  return { name: config.name, logs };
}

/** The key in the data directory, or WITNESS_SIGNING_KEY (PEM or base64 PKCS#8) when set. */
export function loadWitnessKey(dataDir: string, configured: string | undefined): SigningKey {
  if (configured !== undefined && configured.trim() !== '') return parseSigningKey(configured);
  const file = join(dataDir, WITNESS_KEY_FILE);
  try {
    return parseSigningKey(readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  // 'wx': two first starts never overwrite each other's key; the loser reads the winner's.
  try {
    writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return parseSigningKey(readFileSync(file, 'utf8'));
}

class WitnessState {
  private readonly logs: Record<string, LogState>;

  constructor(private readonly file: string) {
    try {
      this.logs = (JSON.parse(readFileSync(file, 'utf8')) as { logs: Record<string, LogState> }).logs;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read the witness state ${file}: ${(error as Error).message}`);
      this.logs = {};
    }
  }

  get(origin: string): LogState | undefined {
    return this.logs[origin];
  }

  /** Records a log's new checkpoint: written to a temporary file, synced, renamed over the old one. */
  set(origin: string, state: LogState): void {
    const next = { ...this.logs, [origin]: state };
    const temporary = `${this.file}.tmp`;
    const fd = openSync(temporary, 'w', 0o600);
    try {
      writeFileSync(fd, `${JSON.stringify({ logs: next }, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.file);
    this.logs[origin] = state;
  }
}

interface Answer {
  status: number;
  body: string;
  contentType?: string;
}

const plain = (status: number, body: string): Answer => ({ status, body: `${body}\n` });

export class Witness {
  private readonly state: WitnessState;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly config: WitnessConfig,
    private readonly key: SigningKey,
    dataDir: string,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.state = new WitnessState(join(dataDir, WITNESS_STATE_FILE));
  }

  /** The witness's cosignature verifier key (type 4): what logs and `vigil verify --witness` are given. */
  get verifierKey(): string {
    return formatVerifierKey({ name: this.config.name, type: NOTE_COSIGNATURE_V1, publicKey: this.key.publicKey });
  }

  /** One add-checkpoint request, after those before it (the check and the write are one step). */
  addCheckpoint(body: string): Promise<Answer> {
    const answer = this.queue.then(() => this.handle(body));
    this.queue = answer.catch(() => undefined);
    return answer;
  }

  private handle(body: string): Answer {
    const blank = body.indexOf('\n\n');
    if (blank < 0) return plain(400, 'the body is an old size line, proof lines, a blank line and a checkpoint note');
    const head = body.slice(0, blank).split('\n');
    const oldMatch = /^old (0|[1-9][0-9]*)$/.exec(head[0]!);
    if (oldMatch === null) return plain(400, 'the first line is "old <size>"');
    const old = Number(oldMatch[1]);
    const proofLines = head.slice(1);
    if (proofLines.length > MAX_PROOF_LINES) return plain(400, `at most ${MAX_PROOF_LINES} proof lines`);
    const proof = proofLines.map((line) => decodeBase64(line));
    if (proof.some((hash) => hash?.length !== 32)) return plain(400, 'each proof line is base64 of a 32-byte hash');
    let note;
    let checkpoint;
    try {
      note = parseNote(body.slice(blank + 2));
      checkpoint = parseCheckpointBody(note.text);
    } catch (error) {
      return plain(400, (error as Error).message);
    }
    const log = this.config.logs.find((candidate) => candidate.origin === checkpoint.origin);
    if (log === undefined) return plain(404, `unknown log origin ${checkpoint.origin}`);
    // Signatures of unknown keys are ignored; one of a known key must verify, and none may fail.
    const known = note.signatures.flatMap((signature) => log.keys.filter((key) => sameKey(signature, key)).map((key) => ({ signature, key })));
    if (known.length === 0 || !known.every(({ signature, key }) => verifyNoteSignature(note.text, signature, key)))
      return plain(403, 'the checkpoint carries no valid signature of a key of its log');
    if (old > checkpoint.treeSize) return plain(400, `old size ${old} is beyond the checkpoint's ${checkpoint.treeSize}`);
    const last = this.state.get(checkpoint.origin);
    const knownSize = last?.size ?? 0;
    if (old !== knownSize) return { status: 409, body: `${knownSize}\n`, contentType: 'text/x.tlog.size' };
    if (old === 0 && proof.length > 0) return plain(400, 'the proof is empty from size 0');
    if (last !== undefined && old === checkpoint.treeSize) {
      if (last.rootHash !== checkpoint.rootHash.toString('base64')) return { status: 409, body: `${knownSize}\n`, contentType: 'text/x.tlog.size' };
    } else if (
      last !== undefined &&
      !verifyConsistency(old, checkpoint.treeSize, Buffer.from(last.rootHash, 'base64'), checkpoint.rootHash, proof as Buffer[])
    ) {
      return plain(422, `the proof does not show the checkpoint consistent with the one cosigned at size ${old}`);
    }
    this.state.set(checkpoint.origin, { size: checkpoint.treeSize, rootHash: checkpoint.rootHash.toString('base64') });
    const cosignature = cosign(note.text, this.config.name, this.key, Math.floor(this.now() / 1000));
    return { status: 200, body: formatSignatureLine(cosignature) };
  }
}

function readBody(request: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolveBody(undefined);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolveBody(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export function witnessServer(witness: Witness): Server {
  return createServer((request: IncomingMessage, response: ServerResponse) => {
    const send = (answer: Answer) => {
      response.writeHead(answer.status, { 'content-type': answer.contentType ?? 'text/plain; charset=utf-8' });
      response.end(answer.body);
    };
    if (request.url !== '/add-checkpoint') return send(plain(404, 'not found: POST /add-checkpoint'));
    if (request.method !== 'POST') return send(plain(405, 'POST /add-checkpoint'));
    readBody(request).then(
      async (body) => send(body === undefined ? plain(413, `the body exceeds ${MAX_BODY_BYTES} bytes`) : await witness.addCheckpoint(body)),
      () => send(plain(400, 'the body could not be read')),
    );
  });
}

export interface WitnessOptions {
  config: string;
  port?: number;
  host?: string;
  dataDir?: string;
}

/** Runs the witness until SIGINT/SIGTERM; prints one JSON line: where it listens and its verifier key. */
export async function runWitness(options: WitnessOptions, env: NodeJS.ProcessEnv): Promise<void> {
  const config = parseWitnessConfig(readFileSync(options.config, 'utf8'), options.config);
  const dataDir = resolve(options.dataDir ?? env.DATA_DIR ?? './data');
  mkdirSync(dataDir, { recursive: true });
  const witness = new Witness(config, loadWitnessKey(dataDir, env.WITNESS_SIGNING_KEY), dataDir);
  const server = witnessServer(witness);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((listening, failed) => {
    server.once('error', failed);
    server.listen(options.port ?? 3500, host, () => listening());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  process.stdout.write(
    `${JSON.stringify({ url: `http://${host}:${port}`, name: config.name, verifierKey: witness.verifierKey, logs: config.logs.map((log) => log.origin) })}\n`,
  );
  await new Promise<void>((stop) => {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await new Promise<void>((closed) => server.close(() => closed()));
}
