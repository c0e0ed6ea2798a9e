import { hash } from 'node:crypto';
import { headInBucket, leafHash, parseHeadsLeaf, sha256, verifyBytes, verifyConsistency, verifyInclusion } from '@vigil/platform/audit-verify';
import { checkpointSigned, keyIdOf, parseCheckpoint, profileOf, rawKeyOf, type Checkpoint, type LogProfile } from './checkpoint.ts';
import { InputError, isHex64, isRecord, parseChainEvent, type Finding } from './input.ts';
import { InclusionBatch } from './tree.ts';
import { acceptErasures, erasedHash, erasureOfFields, uncoveredErasureMessage, type CarriedErasure } from './erasures.ts';

/** docs/audit.md, "Export bundle": what GET /api/audit/export answers. */
export const BUNDLE_FORMAT = 'vigil-audit-bundle/1';

/** A bundle of either log, its scope and items held under observe's names (LogProfile). */
export interface Bundle {
  /** The log it is of: `vigil-observe` (a session's events) or `vigil-gate` (a request's audit entries). */
  log: string;
  sessionId: string;
  head: { seq: number; hash: string | null };
  /** Canonical JSON of each event's chain object, in seq order. */
  events: string[];
  leaves: ({ index: number; proof: string[] } | null)[];
  checkpoint: Checkpoint;
  /** Base64 of the raw 32-byte key that signed the checkpoint. */
  publicKey: string;
  consistency?: { from: number; to: number; proof: string[] };
  /** The key rotations the log records up to the checkpoint: each new key, its certificate and its leaf's inclusion proof. */
  certificates: BundleCertificate[];
  /** The signed erasure leaves covering erased events of the bundle, each with its inclusion proof (absent from bundles of before erasure). */
  erasures: (CarriedErasure & { proof: string[] })[];
  /** The scope's head as the map committed it at `heads.treeSize` (docs/audit.md, "Session heads"). */
  heads?: BundleHeads;
  /** The scope's tombstones after `heads`, each with its inclusion proof in the bundle's checkpoint. */
  tombstones: { leafIndex: number; body: string; signature: string; proof: string[] }[];
}

/** A heads leaf ending the tree of `treeSize` leaves, its inclusion proof there, and the scope's bucket of the map with its path to the map root. */
export interface BundleHeads {
  treeSize: number;
  leafIndex: number;
  leaf: string;
  proof: string[];
  bucket: number;
  entries: string[];
  path: string[];
}

function parseHeads(value: unknown): BundleHeads | undefined {
  if (value === undefined) return undefined;
  if (
    !isRecord(value) ||
    !Number.isSafeInteger(value.treeSize) ||
    !Number.isSafeInteger(value.leafIndex) ||
    typeof value.leaf !== 'string' ||
    !Array.isArray(value.proof) ||
    !value.proof.every(isHex64) ||
    !Number.isSafeInteger(value.bucket) ||
    !Array.isArray(value.entries) ||
    !value.entries.every((entry) => typeof entry === 'string') ||
    !Array.isArray(value.path) ||
    !value.path.every(isHex64)
  )
    throw new InputError(
      'the bundle\'s heads must be {"treeSize", "leafIndex", "leaf", "proof": [hex, …], "bucket", "entries": [string, …], "path": [hex, …]}',
    );
  return value as unknown as BundleHeads;
}

function parseTombstones(value: unknown): Bundle['tombstones'] {
  if (value === undefined) return [];
  const shape = 'the bundle\'s tombstones must be [{"leafIndex", "body", "signature", "proof": [hex, …]}, …]';
  if (!Array.isArray(value)) throw new InputError(shape);
  for (const tombstone of value)
    if (
      !isRecord(tombstone) ||
      !Number.isSafeInteger(tombstone.leafIndex) ||
      typeof tombstone.body !== 'string' ||
      typeof tombstone.signature !== 'string' ||
      !Array.isArray(tombstone.proof) ||
      !tombstone.proof.every(isHex64)
    )
      throw new InputError(shape);
  return value as Bundle['tombstones'];
}

/** A key rotation as a bundle carries it (docs/audit.md, "Key rotation"). */
export interface BundleCertificate {
  publicKey: Buffer;
  leafIndex: number;
  body: string;
  signature: string;
  proof: string[];
}

function parseCertificates(value: unknown): BundleCertificate[] {
  if (value === undefined) return [];
  const shape = 'the bundle\'s certificates must be [{"publicKey", "leafIndex", "body", "signature", "proof": [hex, …]}, …]';
  if (!Array.isArray(value)) throw new InputError(shape);
  return value.map((certificate: unknown) => {
    if (
      !isRecord(certificate) ||
      typeof certificate.publicKey !== 'string' ||
      !Number.isSafeInteger(certificate.leafIndex) ||
      typeof certificate.body !== 'string' ||
      typeof certificate.signature !== 'string' ||
      !Array.isArray(certificate.proof) ||
      !certificate.proof.every(isHex64)
    )
      throw new InputError(shape);
    return {
      publicKey: rawKeyOf(certificate.publicKey, "a certificate's publicKey in the bundle is not canonical base64 of a raw 32-byte Ed25519 key"),
      leafIndex: certificate.leafIndex as number,
      body: certificate.body,
      signature: certificate.signature,
      proof: certificate.proof as string[],
    };
  });
}

/** The certificates whose leaf is not included in the bundle's checkpoint by its proof: findings `key-certificate`. */
export function certificateInclusionFindings(bundle: Bundle): Finding[] {
  const batch = new InclusionBatch(bundle.checkpoint.treeSize, Buffer.from(bundle.checkpoint.rootHash, 'hex'));
  return bundle.certificates.flatMap((certificate) =>
    batch.verify(certificate.leafIndex, leafHash(Buffer.from(certificate.body, 'utf8')), certificate.proof)
      ? []
      : [
          {
            check: 'key-certificate',
            leafIndex: certificate.leafIndex,
            message: `the certificate of key ${keyIdOf(certificate.publicKey)} is not leaf ${certificate.leafIndex} of the checkpoint at tree size ${bundle.checkpoint.treeSize}`,
          },
        ],
  );
}

/** A parsed bundle file; InputError when it is not a v1 bundle of a known log. */
export function parseBundle(value: unknown): Bundle {
  if (!isRecord(value)) throw new InputError('the bundle is not a JSON object');
  if (value.format !== BUNDLE_FORMAT) throw new InputError(`the bundle's format is not "${BUNDLE_FORMAT}"`);
  const profile = profileOf(value.log, 'the bundle');
  const { head, leaves, publicKey, consistency } = value;
  const sessionId = value[profile.scopeField];
  const events = value[profile.items];
  if (typeof sessionId !== 'string') throw new InputError(`the bundle has no ${profile.scopeField}`);
  if (!isRecord(head) || !Number.isSafeInteger(head.seq) || (head.hash !== null && !isHex64(head.hash))) {
    throw new InputError('the bundle\'s head must be {"seq": integer, "hash": hex or null}');
  }
  if (!Array.isArray(events) || !events.every((event) => typeof event === 'string'))
    throw new InputError(`the bundle's ${profile.items} must be an array of strings`);
  if (!Array.isArray(leaves) || leaves.length !== events.length) throw new InputError(`the bundle must have one leaf entry per ${profile.item}`);
  for (const leaf of leaves) {
    if (leaf === null) continue;
    // Proof hashes are decoded when used (a malformed one fails its proof): validating them all up front would cost more than the check.
    if (!isRecord(leaf) || !Number.isSafeInteger(leaf.index) || !Array.isArray(leaf.proof) || !leaf.proof.every((hash) => typeof hash === 'string')) {
      throw new InputError('each of the bundle\'s leaves must be null or {"index": integer, "proof": [hex, …]}');
    }
  }
  if (typeof publicKey !== 'string') throw new InputError('the bundle has no publicKey');
  bundleKeyOf({ publicKey });
  let parsedConsistency: Bundle['consistency'];
  if (consistency !== undefined) {
    if (
      !isRecord(consistency) ||
      !Number.isSafeInteger(consistency.from) ||
      !Number.isSafeInteger(consistency.to) ||
      !Array.isArray(consistency.proof) ||
      !consistency.proof.every(isHex64)
    ) {
      throw new InputError('the bundle\'s consistency must be {"from", "to", "proof": [hex, …]}');
    }
    parsedConsistency = { from: consistency.from as number, to: consistency.to as number, proof: consistency.proof as string[] };
  }
  return {
    log: profile.log,
    sessionId,
    head: { seq: head.seq as number, hash: head.hash as string | null },
    events: events as string[],
    leaves: leaves as Bundle['leaves'],
    checkpoint: parseCheckpoint(value.checkpoint, "the bundle's checkpoint"),
    publicKey,
    ...(parsedConsistency === undefined ? {} : { consistency: parsedConsistency }),
    certificates: parseCertificates(value.certificates),
    erasures: parseErasures(value.erasures),
    ...(value.heads === undefined ? {} : { heads: parseHeads(value.heads) }),
    tombstones: parseTombstones(value.tombstones),
  };
}

function parseErasures(value: unknown): Bundle['erasures'] {
  if (value === undefined) return [];
  if (
    !Array.isArray(value) ||
    !value.every(
      (e) =>
        isRecord(e) &&
        Number.isSafeInteger(e.leafIndex) &&
        typeof e.body === 'string' &&
        typeof e.signature === 'string' &&
        Array.isArray(e.proof) &&
        e.proof.every((hash) => typeof hash === 'string'),
    )
  )
    throw new InputError('the bundle\'s erasures must be [{"leafIndex", "body", "signature", "proof": [hex, …]}, …]');
  return value as Bundle['erasures'];
}

/** The raw key a bundle carries; InputError unless canonical base64 of 32 bytes. */
export function bundleKeyOf(bundle: Pick<Bundle, 'publicKey'>): Buffer {
  return rawKeyOf(bundle.publicKey, "the bundle's publicKey is not canonical base64 of a raw 32-byte Ed25519 key");
}

/** Where a finding about an event points (built only when there is a finding: a bundle has thousands of events). */
function findingAt(sessionId: string, event: { seq: number; id: string }, leaf: { index: number } | null) {
  return { sessionId, seq: event.seq, eventId: event.id, ...(leaf === null ? {} : { leafIndex: leaf.index }) };
}

export interface BundleVerdict {
  findings: Finding[];
  notes: string[];
  eventCount: number;
}

/**
 * Verifies a bundle on its own: the session's (or request's) chain (seq 0… without a gap, each prevHash the hash
 * before it, ending at the recorded head), each event's inclusion in the bundle's checkpoint, and
 * the checkpoint's signature — by `trustedKey` when given (the bundle's key must be it), else by the
 * key the bundle carries (said in the notes).
 */
export function verifyBundle(bundle: Bundle, trustedKey?: Buffer): BundleVerdict {
  const findings: Finding[] = [];
  const notes: string[] = [];
  const { sessionId, checkpoint } = bundle;
  const n: LogProfile = profileOf(bundle.log, 'the bundle');

  const bundleKey = bundleKeyOf(bundle);
  let key: Buffer = bundleKey;
  if (trustedKey === undefined) {
    notes.push(
      `the checkpoint's key (${keyIdOf(bundleKey)}) was taken from the bundle: the signatures were NOT checked against a trusted key (anyone who rewrites the bundle picks its key); pass --public-key, or --checkpoint with a checkpoint saved or witnessed earlier`,
    );
  } else {
    key = trustedKey;
    if (!bundleKey.equals(trustedKey)) {
      findings.push({ check: 'public-key', message: `the bundle's public key (${keyIdOf(bundleKey)}) is not the given key (${keyIdOf(trustedKey)})` });
    }
  }
  if (!checkpointSigned(n.log, checkpoint, key)) {
    findings.push({
      check: 'checkpoint-signature',
      message: `the checkpoint at tree size ${checkpoint.treeSize} is not signed by key ${keyIdOf(key)} (its keyId: ${checkpoint.keyId})`,
    });
  }

  const batch = new InclusionBatch(checkpoint.treeSize, Buffer.from(checkpoint.rootHash, 'hex'));
  // Erasures: signed by the checkpoint's key or a key the bundle's certificates carry, and leaves of the checkpoint.
  const signers = new Map([[keyIdOf(key), key], ...bundle.certificates.map((c): [string, Buffer] => [keyIdOf(c.publicKey), c.publicKey])]);
  const accepted = acceptErasures(n.log, bundle.erasures, signers);
  findings.push(...accepted.findings);
  for (const erasure of bundle.erasures) {
    const leaf = accepted.leaves.get(erasure.leafIndex);
    if (leaf !== undefined && !batch.verify(erasure.leafIndex, Buffer.from(leaf.leafHash, 'hex'), erasure.proof)) {
      findings.push({
        check: 'erasure',
        leafIndex: erasure.leafIndex,
        message: `erasure ${leaf.erasureId} is not leaf ${erasure.leafIndex} of the checkpoint at tree size ${checkpoint.treeSize}`,
      });
      for (const [id, cover] of accepted.erased) if (cover.erasureId === leaf.erasureId) accepted.erased.delete(id);
    }
  }
  let erasedCount = 0;
  let previous = null as { seq: number; hash: string } | null;
  for (let position = 0; position < bundle.events.length; position += 1) {
    const text = bundle.events[position]!;
    let digest = sha256(text);
    let eventHash = digest.toString('hex');
    const leaf = bundle.leaves[position]!;
    const event = parseChainEvent(text, n.scopeField);
    // An erased event stands for the hash its signed erasure leaf lists (checked against its own leaf below).
    const erased = event === undefined ? undefined : erasedHash(event.fields, accepted.erased);
    if (erased !== undefined) {
      digest = Buffer.from(erased, 'hex');
      eventHash = erased;
      erasedCount += 1;
    }
    const marker = event === undefined || erased !== undefined ? null : erasureOfFields(event.fields);
    if (event === undefined) {
      const seq = previous === null ? 0 : previous.seq + 1;
      findings.push({
        check: n.item,
        sessionId,
        seq,
        ...(leaf === null ? {} : { leafIndex: leaf.index }),
        message: `the ${n.item} at seq ${seq} is not a chained ${n.item} object (recipe v1)`,
      });
      previous = { seq, hash: eventHash };
      continue;
    }
    const expectedSeq: number = previous === null ? 0 : previous.seq + 1;
    if (event.sessionId !== sessionId)
      findings.push({
        check: n.scope,
        ...findingAt(sessionId, event, leaf),
        message: `${n.item} ${event.id} belongs to ${n.scope} ${event.sessionId}, not ${sessionId}`,
      });
    if (event.seq !== expectedSeq) {
      findings.push({
        check: 'seq',
        ...findingAt(sessionId, event, leaf),
        message:
          event.seq > expectedSeq
            ? `seq ${expectedSeq} is missing: the next ${n.item}, ${event.id}, has seq ${event.seq}`
            : `${n.item} ${event.id} has seq ${event.seq} where seq ${expectedSeq} was expected`,
      });
    }
    if (event.prevHash !== (previous === null ? null : previous.hash)) {
      findings.push({
        check: 'prev-hash',
        ...findingAt(sessionId, event, leaf),
        message: `${n.item} ${event.id} (seq ${event.seq}): prevHash does not match the hash of the previous ${n.item}`,
      });
    }
    if (leaf === null) {
      findings.push({
        check: 'not-logged',
        ...findingAt(sessionId, event, leaf),
        message: `${n.item} ${event.id} (seq ${event.seq}) has no leaf in the audit log`,
      });
    } else if (!batch.verify(leaf.index, leafHash(digest), leaf.proof)) {
      findings.push({
        check: marker === null ? 'inclusion' : 'erasure',
        ...findingAt(sessionId, event, leaf),
        message:
          marker === null
            ? `${n.item} ${event.id} (seq ${event.seq}) is not leaf ${leaf.index} of the checkpoint at tree size ${checkpoint.treeSize}: its content or its proof was changed`
            : uncoveredErasureMessage(n.item, event.id, marker),
      });
    }
    previous = { seq: event.seq, hash: eventHash };
  }

  const last = previous;
  const head = bundle.head;
  if (last === null ? head.seq !== -1 || head.hash !== null : last.seq !== head.seq || last.hash !== head.hash) {
    findings.push({
      check: 'head',
      sessionId,
      seq: head.seq,
      message:
        last === null
          ? `the ${n.scope} head records seq ${head.seq} but the bundle has no ${n.items}`
          : last.seq < head.seq
            ? `the ${n.scope} head records seq ${head.seq}: ${n.items} are missing at the end of the chain (the last is seq ${last.seq})`
            : `the last ${n.item} (seq ${last.seq}) is not the ${n.scope}'s recorded head (seq ${head.seq}, ${head.hash ?? 'null'})`,
    });
  }
  if (erasedCount > 0)
    notes.push(`${erasedCount} ${n.items} erased under signed erasure leaves (their content replaced by a marker; hashes and positions kept)`);
  return { findings, notes, eventCount: bundle.events.length };
}

/**
 * Whether two checkpoints are of one append-only log: the same root at the same size, else the
 * smaller a prefix of the larger by the consistency proof between their sizes (RFC 9162 §2.1.4.2).
 */
export function checkConsistency(a: Checkpoint, b: Checkpoint, proof: readonly string[]): Finding | undefined {
  const [older, newer] = a.treeSize <= b.treeSize ? [a, b] : [b, a];
  // Hashes are lowercase hex (docs/audit.md); Buffer.from would read other spellings, or stop at the first stray character.
  const consistent =
    proof.every(isHex64) &&
    verifyConsistency(
      older.treeSize,
      newer.treeSize,
      Buffer.from(older.rootHash, 'hex'),
      Buffer.from(newer.rootHash, 'hex'),
      proof.map((hash) => Buffer.from(hash, 'hex')),
    );
  if (consistent) return undefined;
  return {
    check: 'consistency',
    message:
      older.treeSize === newer.treeSize
        ? `the checkpoints at tree size ${older.treeSize} have different roots: the log was rewritten`
        : `the checkpoint at tree size ${older.treeSize} is not a prefix of the one at tree size ${newer.treeSize}: the log was rewritten`,
  };
}

/** An item's hash in its chain: of its text, or for an erased one the hash its signed erasure leaf lists. */
function chainedHashOf(text: string, scopeField: string, erased: ReturnType<typeof acceptErasures>['erased']): string {
  const parsed = parseChainEvent(text, scopeField);
  return (parsed === undefined ? undefined : erasedHash(parsed.fields, erased)) ?? hash('sha256', text, 'hex');
}

/**
 * Whether the bundle holds every item of its scope up to the saved checkpoint (docs/audit.md,
 * "Session heads"): the heads leaf ending the saved tree, proven by the saved root, commits the
 * map in which the scope's bucket (proven whole) gives the head the scope had then; the bundle's
 * chain must reach that head, or a tombstone signed by a trusted key (`keyOf`) after it must
 * account for the scope's removal. Each failure is a finding naming what is missing.
 */
export function completenessFindings(
  bundle: Bundle,
  saved: { treeSize: number; rootHash: string },
  keyOf: (keyId: string) => Buffer | undefined,
): { findings: Finding[]; notes: string[] } {
  const n = profileOf(bundle.log, 'the bundle');
  const { sessionId } = bundle;
  const heads = bundle.heads;
  const size = saved.treeSize;
  if (size === 0) return { findings: [], notes: [] };
  if (heads === undefined || heads.treeSize !== size)
    return {
      findings: [
        {
          check: 'completeness',
          sessionId,
          message: `the bundle carries no commitment of ${n.scope} ${sessionId}'s head at the saved checkpoint (tree size ${size}), so it cannot show that none of its ${n.items} (or the ${n.scope} itself) is missing: export it with ?since=${size} (a checkpoint signed before Vigil committed ${n.scope} heads cannot show it: save a newer one)`,
        },
      ],
      notes: [],
    };
  const leaf = parseHeadsLeaf(heads.leaf, bundle.log);
  if (
    heads.leafIndex !== size - 1 ||
    leaf?.treeSize !== size - 1 ||
    !verifyInclusion(
      size - 1,
      size,
      leafHash(Buffer.from(heads.leaf, 'utf8')),
      heads.proof.map((node) => Buffer.from(node, 'hex')),
      Buffer.from(saved.rootHash, 'hex'),
    )
  )
    return {
      findings: [
        {
          check: 'heads',
          sessionId,
          leafIndex: size - 1,
          message: `the bundle's heads leaf is not leaf ${size - 1} of the saved checkpoint (tree size ${size}), or that leaf commits no map of ${n.scope} heads: the ${n.scope}'s completeness at the saved checkpoint is not shown`,
        },
      ],
      notes: [],
    };
  const committed = headInBucket(
    sessionId,
    heads.bucket,
    heads.entries,
    heads.path.map((node) => Buffer.from(node, 'hex')),
    leaf,
  );
  if (typeof committed === 'string')
    return {
      findings: [{ check: 'heads', sessionId, leafIndex: size - 1, message: `the map of heads at the saved checkpoint does not verify: ${committed}` }],
      notes: [],
    };
  if (committed === null)
    return {
      findings: [],
      notes: [`${n.scope} ${sessionId} had no ${n.items} at the saved checkpoint (tree size ${size}): the map of heads it commits has no entry for it`],
    };

  const events = bundle.events;
  const atSeq =
    events.length > committed.seq ? chainedHashOf(events[committed.seq]!, n.scopeField, acceptErasures(n.log, bundle.erasures, keyOf).erased) : undefined;
  if (atSeq !== undefined && atSeq === committed.hash) return { findings: [], notes: [] };

  // Removed since by retention: a signed tombstone after the saved tree, included in the bundle's checkpoint, recording at least that head.
  const batch = new InclusionBatch(bundle.checkpoint.treeSize, Buffer.from(bundle.checkpoint.rootHash, 'hex'));
  for (const tombstone of bundle.tombstones) {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(tombstone.body) as Record<string, unknown>;
    } catch {
      continue;
    }
    const key = typeof body.keyId === 'string' ? keyOf(body.keyId) : undefined;
    if (
      tombstone.leafIndex >= size &&
      body.v === 1 &&
      body.kind === 'tombstone' &&
      body.log === bundle.log &&
      body[n.scopeField] === sessionId &&
      Number.isSafeInteger(body.headSeq) &&
      (body.headSeq as number) >= committed.seq &&
      (body.headSeq !== committed.seq || body.headHash === committed.hash) &&
      key !== undefined &&
      verifyBytes(Buffer.from(tombstone.body, 'utf8'), tombstone.signature, key) &&
      batch.verify(tombstone.leafIndex, leafHash(Buffer.from(tombstone.body, 'utf8')), tombstone.proof)
    )
      return {
        findings: [],
        notes: [`${n.scope} ${sessionId} was removed by retention after the saved checkpoint: signed tombstone at leaf ${tombstone.leafIndex}`],
      };
  }
  const head = `the saved checkpoint (tree size ${size}) committed ${n.scope} ${sessionId}'s head at seq ${committed.seq} (${committed.hash ?? 'null'})`;
  const last = events.length - 1;
  return {
    findings: [
      {
        check: 'missing',
        sessionId,
        seq: Math.min(committed.seq, last + 1),
        message:
          events.length === 0
            ? `${n.scope} ${sessionId} is missing: ${head}, but the bundle holds none of its ${n.items} and no signed tombstone removed it`
            : events.length <= committed.seq
              ? `${n.items} are missing from ${n.scope} ${sessionId}: ${head}, but the bundle's chain ends at seq ${last}: seq ${last + 1}–${committed.seq} are missing`
              : `${n.scope} ${sessionId} was rewritten: ${head}, but the bundle's ${n.item} at seq ${committed.seq} has another hash`,
      },
    ],
    notes: [],
  };
}
