/**
 * `vigil verify evidence FILE`: checks a pack offline (docs/audit.md, "Evidence packs"): the
 * manifest's signatures against the trusted keys, every part's digest, each checkpoint's signature
 * and the consistency proof between consecutive checkpoints. Exit 0 valid; 1 a check failed (the
 * finding names the part); 2 usage or an unreadable file; 3 no finding but no trusted key given.
 */
import { readFileSync } from 'node:fs';
import { evidenceManifestMessage, keyIdOf, verifyBytes, verifyCheckpoint, verifyConsistency } from '@vigil/platform/audit-verify';
import { parsePublicKey, parseCheckpoint, rawKeyOf } from '../verify/checkpoint.ts';
import { certifiedKeys, listedKeys } from '../verify/rotation.ts';
import { InputError, isRecord } from '../verify/input.ts';
import { MANIFEST_PATH, readContainer, SIGNATURES_PATH, sha256Hex, type CheckpointsPart } from '@vigil/observe';

export interface EvidenceFinding {
  part: string;
  message: string;
}

export interface EvidenceVerdict {
  findings: EvidenceFinding[];
  notes: string[];
  /** Whether a key the caller trusts signed the manifest. */
  trusted: boolean;
}

/** Verifies a pack's text against the trusted keys (by keyId); `pinnedKeyIds` are keyIds a saved checkpoint pins. */
export function verifyEvidence(text: string, givenKeys: ReadonlyMap<string, Buffer>, pinnedKeyIds: readonly string[] = []): EvidenceVerdict {
  const findings: EvidenceFinding[] = [];
  const notes: string[] = [];
  const { files, unreadable } = readContainer(text);
  const byPath = new Map(files.map((file) => [file.path, file.content]));
  const manifestText = byPath.get(MANIFEST_PATH);
  let manifest: { parts: { name: string; path: string; sha256: string }[] } | undefined;
  try {
    const value = JSON.parse(manifestText ?? '') as unknown;
    if (!isRecord(value) || value.format !== 'vigil-evidence' || value.v !== 1 || !Array.isArray(value.parts)) throw new Error('not a v1 manifest');
    manifest = value as typeof manifest;
  } catch {
    findings.push({ part: 'manifest', message: `${MANIFEST_PATH} is missing or not a v1 evidence manifest` });
  }
  const order = [MANIFEST_PATH, ...(manifest?.parts.map((part) => part.path) ?? []), SIGNATURES_PATH];
  for (const { line, reason } of unreadable) {
    const path = order[line - 1];
    const part = path === undefined ? `line ${line}` : (manifest?.parts.find((p) => p.path === path)?.name ?? path.replace(/\.json$/, ''));
    findings.push({ part, message: `line ${line} of the pack is unreadable (${reason})` });
  }
  if (manifest === undefined) return { findings, notes, trusted: false };

  // The keys the verification trusts: the given ones, the pinned ones among the logs' keys, and every
  // key a trusted one certified (a rotation inside the period), as `vigil verify` follows them.
  const checkpointParts = new Map<string, CheckpointsPart>();
  for (const part of manifest.parts.filter((p) => p.name.startsWith('checkpoints-'))) {
    const content = byPath.get(part.path);
    if (content === undefined || sha256Hex(Buffer.from(content, 'utf8')) !== part.sha256) continue;
    const data = JSON.parse(content) as CheckpointsPart | null;
    if (data !== null) checkpointParts.set(part.name, data);
  }
  const trustedKeys = new Map(givenKeys);
  for (const data of checkpointParts.values()) {
    const listed = listedKeys(data);
    for (const keyId of pinnedKeyIds) if (listed.keys.has(keyId)) trustedKeys.set(keyId, listed.keys.get(keyId)!);
  }
  for (const data of checkpointParts.values()) {
    const listed = listedKeys(data);
    certifiedKeys(data.log, trustedKeys, listed.keys, listed.certificates, notes);
  }

  // The manifest's signatures.
  const manifestSha256 = sha256Hex(Buffer.from(manifestText!, 'utf8'));
  let trusted = false;
  try {
    const value = JSON.parse(byPath.get(SIGNATURES_PATH) ?? '') as { manifestSha256?: unknown; signatures?: unknown };
    if (value.manifestSha256 !== manifestSha256)
      findings.push({ part: 'signatures', message: `the signed digest is not the manifest's SHA-256 (${manifestSha256})` });
    if (!Array.isArray(value.signatures) || value.signatures.length === 0) throw new Error('no signatures');
    for (const signature of value.signatures as Record<string, unknown>[]) {
      const { log, keyId, publicKey, timestamp, signature: sig } = signature;
      if (typeof log !== 'string' || typeof keyId !== 'string' || typeof timestamp !== 'string' || typeof sig !== 'string' || typeof publicKey !== 'string')
        throw new Error('a signature is not {log, keyId, publicKey, timestamp, signature}');
      const raw = rawKeyOf(publicKey, `the key of the ${log} signature is not a raw Ed25519 key`);
      const message = evidenceManifestMessage(log, { manifestSha256, timestamp, keyId });
      if (keyIdOf(raw) !== keyId || !verifyBytes(message, sig, raw)) {
        findings.push({ part: 'signatures', message: `the ${log} signature of the manifest does not verify with key ${keyId}` });
        continue;
      }
      if (trustedKeys.has(keyId) || pinnedKeyIds.includes(keyId)) {
        trusted = true;
        notes.push(`manifest signed by ${log} key ${keyId} (trusted)`);
      } else notes.push(`manifest signed by ${log} key ${keyId}, which no --public-key or --checkpoint pins`);
    }
  } catch (error) {
    findings.push({ part: 'signatures', message: `${SIGNATURES_PATH} is missing or unreadable: ${(error as Error).message}` });
  }

  // Every part's digest.
  const listed = new Set([MANIFEST_PATH, SIGNATURES_PATH]);
  for (const part of manifest.parts) {
    listed.add(part.path);
    const content = byPath.get(part.path);
    if (content === undefined) {
      if (!findings.some((finding) => finding.part === part.name)) findings.push({ part: part.name, message: `${part.path} is missing from the pack` });
    } else if (sha256Hex(Buffer.from(content, 'utf8')) !== part.sha256) {
      findings.push({ part: part.name, message: `${part.path} does not match its SHA-256 in the manifest` });
    }
  }
  for (const path of byPath.keys()) if (!listed.has(path)) findings.push({ part: path, message: `${path} is not listed in the manifest` });

  // The checkpoints: signatures (of a log with a trusted key, by trusted keys only, so a key change no
  // trusted key certified fails; of another, by the keys the pack lists, said in a note), and consistency between consecutive ones.
  for (const [name, data] of checkpointParts) {
    const listed = listedKeys(data).keys;
    const pinned = [...listed.keys()].some((keyId) => trustedKeys.has(keyId));
    if (!pinned) notes.push(`${name}: checked against the keys the pack lists (${[...listed.keys()].join(', ')}), which no --public-key or --checkpoint pins`);
    findings.push(...checkpointFindings(name, data, pinned ? trustedKeys : listed));
  }
  return { findings, notes, trusted };
}

function checkpointFindings(part: string, data: CheckpointsPart, keys: ReadonlyMap<string, Buffer>): EvidenceFinding[] {
  const findings: EvidenceFinding[] = [];
  const checkpoints = data.checkpoints.map((listed, i) => parseCheckpoint(listed.checkpoint, `${part}: checkpoint ${i}`));
  for (const checkpoint of checkpoints) {
    const key = keys.get(checkpoint.keyId);
    if (key === undefined || !verifyCheckpoint(data.log, checkpoint, key))
      findings.push({ part, message: `the checkpoint at tree size ${checkpoint.treeSize} is not signed by key ${checkpoint.keyId}` });
  }
  for (let i = 1; i < checkpoints.length; i++) {
    const [first, second] = [checkpoints[i - 1]!, checkpoints[i]!];
    const proof = data.consistency[i - 1];
    const ok =
      proof !== undefined &&
      proof.from === first.treeSize &&
      proof.to === second.treeSize &&
      verifyConsistency(
        first.treeSize,
        second.treeSize,
        Buffer.from(first.rootHash, 'hex'),
        Buffer.from(second.rootHash, 'hex'),
        proof.proof.map((hash) => Buffer.from(hash, 'hex')),
      );
    if (!ok) findings.push({ part, message: `no valid consistency proof from tree size ${first.treeSize} to ${second.treeSize}` });
  }
  return findings;
}

export interface VerifyEvidenceOptions {
  publicKey?: string[];
  checkpoint?: string[];
  json?: boolean;
}

function readKeyArgument(value: string): Buffer {
  let text = value;
  try {
    text = readFileSync(value, 'utf8');
  } catch {
    // not a file: the key itself
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (isRecord(parsed) && typeof parsed.publicKey === 'string') text = parsed.publicKey;
  } catch {
    // not JSON
  }
  return parsePublicKey(text, `--public-key ${value}`);
}

export async function runVerifyEvidence(
  file: string,
  options: VerifyEvidenceOptions,
  io: { out(text: string): void; err(text: string): void },
): Promise<number> {
  let verdict: EvidenceVerdict;
  try {
    const trusted = new Map<string, Buffer>();
    for (const value of options.publicKey ?? []) {
      const key = readKeyArgument(value);
      trusted.set(keyIdOf(key), key);
    }
    const pinned: string[] = [];
    for (const saved of options.checkpoint ?? []) {
      let value: unknown;
      try {
        value = JSON.parse(readFileSync(saved, 'utf8'));
      } catch {
        throw new InputError(`--checkpoint ${saved} is not a readable JSON file`);
      }
      pinned.push(parseCheckpoint(isRecord(value) && value.type === 'audit.checkpoint' ? value.checkpoint : value, `--checkpoint ${saved}`).keyId);
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      throw new InputError(`${file} cannot be read`);
    }
    verdict = verifyEvidence(text, trusted, pinned);
    const anyTrust = trusted.size > 0 || pinned.length > 0;
    if (anyTrust && !verdict.trusted && !verdict.findings.some((f) => f.part === 'signatures'))
      verdict.findings.push({ part: 'signatures', message: 'the manifest is signed by no trusted key (--public-key, --checkpoint)' });
    const code = verdict.findings.length > 0 ? 1 : anyTrust ? 0 : 3;
    if (options.json === true) io.out(`${JSON.stringify({ valid: code === 0, exitCode: code, ...verdict })}\n`);
    else {
      for (const finding of verdict.findings) io.out(`FAIL ${finding.part}: ${finding.message}\n`);
      for (const note of verdict.notes) io.out(`note: ${note}\n`);
      io.out(
        code === 0
          ? `VALID evidence pack ${file}\n`
          : code === 3
            ? 'UNVERIFIED (no trusted key: pass --public-key or --checkpoint): the pack is intact but its signer is not pinned\n'
            : `INVALID evidence pack ${file}: ${verdict.findings.length} finding(s)\n`,
      );
    }
    return code;
  } catch (error) {
    io.err(`vigil verify evidence: ${(error as Error).message}\n`);
    return 2;
  }
}
