/**
 * `vigil verify erasure-receipt FILE --public-key KEY`: checks an erasure's deletion receipt
 * (DELETE /api/subjects/:id of observe or the gate, docs/guide/erasure.md#the-receipt) offline: its
 * leaf is an erasure leaf of the log it names, signed by the trusted audit key, and says what the
 * receipt says (erasure, subject, events or requests). Exit 0 valid, 1 invalid, 2 usage or
 * unreadable input — as `vigil verify`.
 */
import { readFileSync } from 'node:fs';
import { leafHash, verifyBytes } from '@vigil/platform/audit-verify';
import { parseGateErasureLeaf } from '@vigil/gate/request-evidence';
import { parseErasureLeaf } from '@vigil/observe/erasure-leaf';
import { EXIT_TAMPERED, EXIT_USAGE, EXIT_VALID, type VerifyIo } from './command.ts';
import { GATE_PROFILE, OBSERVE_PROFILE, parsePublicKey } from './checkpoint.ts';
import { InputError, isRecord } from './input.ts';

export async function runVerifyErasureReceipt(
  file: string,
  options: { publicKey?: string; json?: boolean },
  env: NodeJS.ProcessEnv,
  io: VerifyIo,
): Promise<number> {
  try {
    let receipt: unknown;
    try {
      receipt = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new InputError(`cannot read the receipt ${file}: ${(error as Error).message}`);
    }
    const leafOf = isRecord(receipt) && isRecord(receipt.leaf) ? receipt.leaf : undefined;
    if (!isRecord(receipt) || leafOf === undefined || typeof leafOf.body !== 'string' || typeof leafOf.signature !== 'string')
      throw new InputError(`${file} is not an erasure receipt (no leaf with body and signature)`);
    const body = leafOf.body;
    // The gate's receipts count requests; observe's count events.
    const gate = 'requestCount' in receipt;
    const keyVariable = gate ? 'VIGIL_GATE_PUBLIC_KEY' : 'VIGIL_OBSERVE_PUBLIC_KEY';
    const keyOption = options.publicKey ?? (env[keyVariable]?.trim() || undefined);
    if (keyOption === undefined)
      throw new InputError(`give the ${gate ? "gate's" : "observe's"} audit key with --public-key (or ${keyVariable}): GET /api/audit/public-key answers it`);
    const key = parsePublicKey(keyOption, '--public-key');
    const log = gate ? GATE_PROFILE.log : OBSERVE_PROFILE.log;
    const leaf = parseErasureLeaf(body, log);
    const requests = gate ? parseGateErasureLeaf(body, log)?.requests : undefined;
    const reasons: string[] = [];
    if (leaf === undefined || (gate && requests === undefined)) reasons.push(`its leaf is not an erasure leaf of ${log}`);
    else {
      if (!verifyBytes(Buffer.from(body, 'utf8'), leafOf.signature, key))
        reasons.push(`its leaf is not signed by the trusted key (altered, forged, or signed by key ${leaf.keyId})`);
      if (receipt.erasureId !== leaf.erasureId) reasons.push(`it names erasure ${String(receipt.erasureId)}, its leaf ${leaf.erasureId}`);
      if (receipt.subject !== leaf.subject) reasons.push('its subject is not the one its leaf names');
      if (requests !== undefined) {
        if (receipt.requestCount !== requests.size) reasons.push(`it counts ${String(receipt.requestCount)} requests, its leaf lists ${requests.size}`);
      } else if (receipt.eventCount !== leaf.events.length)
        reasons.push(`it counts ${String(receipt.eventCount)} events, its leaf lists ${leaf.events.length}`);
    }
    const valid = reasons.length === 0;
    const leafHashHex = leafHash(Buffer.from(body, 'utf8')).toString('hex');
    if (options.json === true)
      io.out(`${JSON.stringify({ valid, reasons, erasureId: leaf?.erasureId ?? null, leafIndex: leafOf.index ?? null, leafHash: leafHashHex })}\n`);
    else if (valid)
      io.out(
        `VALID: erasure ${leaf!.erasureId} of subject ${leaf!.subject}: ${requests === undefined ? `${leaf!.events.length} events` : `${requests.size} requests (${leaf!.events.length} audit entries)`}, reason "${leaf!.reason}", requested by ${leaf!.requestedBy} at ${leaf!.timestamp}; ` +
          `leaf ${String(leafOf.index)} (leaf hash ${leafHashHex}) signed by key ${leaf!.keyId}\n`,
      );
    else io.out(`INVALID: ${reasons.join('; ')}\n`);
    return valid ? EXIT_VALID : EXIT_TAMPERED;
  } catch (error) {
    io.err(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_USAGE;
  }
}
