/**
 * `vigil verify receipt FILE [--public-key KEY]`: checks an approval receipt offline
 * (docs/guide/receipts.md) with the SDK's verifyReceipt. Exit 0 valid, 1 invalid (altered, forged,
 * or signed by a key not trusted), 2 usage or unreadable input — as `vigil verify`.
 *
 * The key: --public-key (else VIGIL_GATE_PUBLIC_KEY) is base64 of the raw key, a PEM, or a file
 * holding either — or holding the gate's GET /api/audit/public-key answer, whose current key is then
 * trusted with the keys its certified rotations link it to (a receipt signed just before a rotation).
 */
import { existsSync, readFileSync } from 'node:fs';
import { isReceiptShaped, trustedReceiptKeys, verifyReceipt, type GatePublicKeys } from '@vigil/sdk';
import { EXIT_TAMPERED, EXIT_USAGE, EXIT_VALID, type VerifyIo } from './command.ts';
import { parsePublicKey } from './checkpoint.ts';
import { InputError, isRecord } from './input.ts';

export interface VerifyReceiptOptions {
  publicKey?: string;
  json?: boolean;
}

function read(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function isKeyList(value: unknown): value is GatePublicKeys {
  return isRecord(value) && typeof value.publicKey === 'string' && Array.isArray(value.keys);
}

/** The keys to trust: one given key, or the key set of a saved GET /api/audit/public-key answer. */
async function trustedKeys(value: string): Promise<Uint8Array[]> {
  const trimmed = value.trim();
  const looksLikeKey = trimmed.startsWith('-----BEGIN') || /^[A-Za-z0-9+/]{43}=$/.test(trimmed);
  if (looksLikeKey || !existsSync(value)) return [parsePublicKey(value, '--public-key')];
  const text = read(value, 'the public key file');
  if (text.trim().startsWith('{')) {
    const answer = parseJson(text, `the public key file ${value}`);
    if (!isKeyList(answer)) throw new InputError(`the public key file ${value} is not a GET /api/audit/public-key answer`);
    return trustedReceiptKeys(answer, []);
  }
  return [parsePublicKey(text, `the public key in ${value}`)];
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new InputError(`${what} is not JSON`);
  }
}

export async function runVerifyReceipt(file: string, options: VerifyReceiptOptions, env: NodeJS.ProcessEnv, io: VerifyIo): Promise<number> {
  try {
    const keyOption = options.publicKey ?? (env.VIGIL_GATE_PUBLIC_KEY?.trim() || undefined);
    if (keyOption === undefined)
      throw new InputError("give the gate's key with --public-key (or VIGIL_GATE_PUBLIC_KEY): GET /api/audit/public-key of the gate answers it");
    const keys = await trustedKeys(keyOption);
    const receipt = parseJson(read(file, 'the receipt'), `the receipt ${file}`);
    const shaped = isReceiptShaped(receipt);
    const valid = shaped && (await verifyReceipt(receipt, keys));
    const reason = !shaped
      ? 'not an approval receipt of version 1 (a field missing, mistyped or extra)'
      : valid
        ? null
        : `its signature does not verify with the trusted key${keys.length === 1 ? '' : 's'} (altered, forged, or signed by key ${receipt.keyId}, which is not trusted)`;
    const expired = shaped && Date.parse(receipt.expiresAt) <= Date.now();
    if (options.json === true) {
      io.out(`${JSON.stringify({ valid, reason, expired, receipt: shaped ? receipt : null })}\n`);
    } else if (valid) {
      io.out(
        `VALID: receipt for request ${receipt.requestId}, action "${receipt.action}", argsDigest ${receipt.argsDigest}, ` +
          `signed by key ${receipt.keyId}; ${expired ? 'expired' : 'expires'} ${receipt.expiresAt}\n`,
      );
    } else {
      io.out(`INVALID: ${reason}\n`);
    }
    return valid ? EXIT_VALID : EXIT_TAMPERED;
  } catch (error) {
    io.err(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_USAGE;
  }
}
