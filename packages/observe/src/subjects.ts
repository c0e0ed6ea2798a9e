// Data subjects (docs/guide/erasure.md): where an event names the person its content is about, and
// the keyed hash their id is recorded under wherever the service keeps it past an erasure (the
// subject index, holds, erasure leaves and receipts), so the raw id is not kept.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { hmacSha256Hex, readOrCreateSecretFile } from '@vigil/platform';
import type { ObserveConfig } from './config.ts';

const SUBJECT_KEY_FILE = 'subject-hash.key';

export class SubjectHasher {
  private readonly key: string;

  constructor(config: Pick<ObserveConfig, 'subjects' | 'dataDir'>) {
    this.key = config.subjects.hashKey ?? readOrCreateSecretFile(join(config.dataDir, SUBJECT_KEY_FILE), () => randomBytes(32).toString('base64url'));
  }

  /** HMAC-SHA256 (hex) of the subject id under the service's subject key. */
  hash(subjectId: string): string {
    return hmacSha256Hex(this.key, `vigil-subject:${subjectId}`);
  }
}
