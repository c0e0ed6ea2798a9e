/**
 * `vigil verify --witness KEY … --min-witnesses K` (docs/audit.md, "Witness policy"): the server's
 * latest C2SP checkpoint note (GET /api/audit/tlog/checkpoint) must be signed by the log's note key,
 * consistent with the latest checkpoint the audit checked, and carry valid v1 cosignatures of at
 * least K of the given witnesses; otherwise a `witness-policy` finding says what is missing.
 */
import {
  cosignerKey,
  NOTE_ED25519,
  parseCheckpointBody,
  parseNote,
  parseVerifierKey,
  sameKey,
  verifyConsistency,
  verifyCosignature,
  verifyNoteSignature,
  type NoteKey,
} from '@vigil/platform/audit-verify';
import type { ApiClient } from '../eval-gate-http.ts';
import { parseCheckpoint } from './checkpoint.ts';
import { InputError, type Finding } from './input.ts';

export interface WitnessPolicy {
  witnesses: NoteKey[];
  min: number;
}

/** --witness (verifier keys, type 4 or type 1 read as the same key's cosignatures) and --min-witnesses (default: every one given). */
export function parseWitnessPolicy(witness: readonly string[] | undefined, min: string | undefined): WitnessPolicy | undefined {
  if ((witness === undefined || witness.length === 0) && min === undefined) return undefined;
  const witnesses = (witness ?? []).map((text) => {
    try {
      return cosignerKey(parseVerifierKey(text));
    } catch (error) {
      throw new InputError(`--witness ${text}: ${(error as Error).message}`);
    }
  });
  if (min !== undefined && !/^[1-9][0-9]{0,5}$/.test(min)) throw new InputError(`--min-witnesses ${min} must be a positive integer`);
  const count = min === undefined ? witnesses.length : Number(min);
  if (witnesses.length === 0) throw new InputError('--min-witnesses needs the witnesses it counts: give each with --witness KEY');
  return { witnesses, min: count };
}

const finding = (message: string): Finding => ({ check: 'witness-policy', message });

/** The findings of the policy against the server; none when the latest note is cosigned by K of the witnesses. */
export async function witnessPolicyFindings(
  client: ApiClient,
  policy: WitnessPolicy,
  trustedKey: Buffer | undefined,
): Promise<{ findings: Finding[]; notes: string[] }> {
  const listing = await client.get<{ noteVerifierKey?: unknown; origin?: unknown }>('/api/audit/public-key');
  if (typeof listing.noteVerifierKey !== 'string')
    throw new InputError('the server names no note verifier key (GET /api/audit/public-key): it serves no C2SP checkpoints');
  const logKey = parseVerifierKey(listing.noteVerifierKey);
  if (logKey.type !== NOTE_ED25519) throw new InputError("the server's note verifier key is not an Ed25519 note key");
  if (trustedKey !== undefined && !logKey.publicKey.equals(trustedKey))
    return { findings: [finding('the checkpoint notes are signed by a key other than the trusted one (--public-key)')], notes: [] };

  const response = await fetch(`${client.baseUrl}/api/audit/tlog/checkpoint`, {
    headers: client.authorization === undefined ? {} : { authorization: client.authorization },
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (response.status === 404) return { findings: [finding('the server has no checkpoint note: nothing was witnessed')], notes: [] };
  if (response.status !== 200) throw new InputError(`GET /api/audit/tlog/checkpoint answered ${response.status}: ${text.slice(0, 200)}`);
  let note;
  let body;
  try {
    note = parseNote(text);
    body = parseCheckpointBody(note.text);
  } catch (error) {
    return { findings: [finding(`the checkpoint note is malformed: ${(error as Error).message}`)], notes: [] };
  }
  const findings: Finding[] = [];
  const own = note.signatures.find((signature) => sameKey(signature, logKey));
  if (own === undefined || !verifyNoteSignature(note.text, own, logKey))
    findings.push(finding(`the checkpoint note at tree size ${body.treeSize} is not signed by the log's note key ${listing.noteVerifierKey}`));
  if (listing.origin !== undefined && body.origin !== listing.origin)
    findings.push(finding(`the checkpoint note is of the log "${body.origin}", not the server's "${String(listing.origin)}"`));

  // The witnessed tree must be a prefix of the tree the audit checked (its latest checkpoint).
  const latest = parseCheckpoint(await client.get('/api/audit/checkpoint'), "the server's latest checkpoint");
  if (body.treeSize > latest.treeSize) {
    findings.push(finding(`the checkpoint note's tree size ${body.treeSize} is beyond the latest checkpoint's (${latest.treeSize})`));
  } else {
    const { proof } = await client.get<{ proof: string[] }>(`/api/audit/consistency?from=${body.treeSize}&to=${latest.treeSize}`);
    const hashes = proof.map((hash) => Buffer.from(hash, 'hex'));
    if (!verifyConsistency(body.treeSize, latest.treeSize, body.rootHash, Buffer.from(latest.rootHash, 'hex'), hashes))
      findings.push(finding(`the witnessed tree (size ${body.treeSize}) is not a prefix of the latest checkpoint's (size ${latest.treeSize})`));
  }

  const cosigned = policy.witnesses.filter((witness) =>
    note.signatures.some((signature) => sameKey(signature, witness) && verifyCosignature(note.text, signature, witness) !== undefined),
  );
  const named = (keys: readonly NoteKey[]) => keys.map((key) => key.name).join(', ') || 'none';
  if (cosigned.length < policy.min)
    findings.push(
      finding(
        `the checkpoint at tree size ${body.treeSize} carries ${cosigned.length} valid cosignature${cosigned.length === 1 ? '' : 's'} of the given witnesses (${named(cosigned)}), fewer than the ${policy.min} required`,
      ),
    );
  return {
    findings,
    notes: [
      `witnessed: the checkpoint at tree size ${body.treeSize} is cosigned by ${cosigned.length} of ${policy.witnesses.length} given witnesses (${named(cosigned)}); ${policy.min} required`,
    ],
  };
}
