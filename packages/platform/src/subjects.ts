// Data subjects (docs/guide/erasure.md): the keyed hash a person's id is recorded under wherever a
// service keeps it past an erasure (subject indexes, holds, erasure leaves and receipts), so the raw
// id is not kept. Observe and the gate hash with the same recipe, so one key names one subject in both.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { hmacSha256Hex } from './crypto.ts';
import { readOrCreateSecretFile } from './secret-file.ts';

const SUBJECT_KEY_FILE = 'subject-hash.key';

export class SubjectHasher {
  private readonly key: string;

  /** `hashKey` (SUBJECT_HASH_KEY), else a key generated into `dataDir`/subject-hash.key. */
  constructor(config: { hashKey?: string | undefined; dataDir: string }) {
    this.key = config.hashKey ?? readOrCreateSecretFile(join(config.dataDir, SUBJECT_KEY_FILE), () => randomBytes(32).toString('base64url'));
  }

  /** HMAC-SHA256 (hex) of the subject id under the service's subject key. */
  hash(subjectId: string): string {
    return hmacSha256Hex(this.key, `vigil-subject:${subjectId}`);
  }
}
