/**
 * Test support: an audit log built in memory exactly as the observe service builds it (chain
 * recipe v1, RFC 9162 leaves, Ed25519 checkpoints), so the verification core is tested without a
 * server. Not used by the command.
 */
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import {
  canonicalJson,
  checkpointMessage,
  consistencyProof,
  inclusionProof,
  keyIdOf,
  leafHash,
  nodeHash,
  signBytes,
  treeRoot,
  type Checkpoint,
} from '@vigil/platform';
import type { Bundle } from './bundle.ts';
import { OBSERVE_LOG } from './checkpoint.ts';
import type { WalkedLeaf } from './walk.ts';

export interface TestKey {
  privateKey: KeyObject;
  /** The raw 32-byte public key. */
  publicKey: Buffer;
  keyId: string;
}

export function testKey(): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return { privateKey, publicKey: raw, keyId: keyIdOf(raw) };
}

export function chainEvent(sessionId: string, seq: number, prevHash: string | null, payload: unknown = { n: seq }): string {
  return canonicalJson({
    v: 1,
    id: `${sessionId}-e${seq}`,
    seq,
    timestamp: new Date(Date.UTC(2026, 10, 22, 10, 0, 0, seq)).toISOString(),
    sessionId,
    agentId: 'agent-1',
    eventType: 'tool_call',
    severity: 'info',
    payload,
    metadata: {},
    prevHash,
  });
}

export function sha256(text: string | Buffer): Buffer {
  return createHash('sha256').update(text).digest();
}

interface LeafEntry {
  hash: Buffer;
  sessionId: string;
  eventId: string | null;
  event: string | null;
  tombstone: { body: string; signature: string } | null;
}

/** An append-only log of sessions' events and tombstones, with what the server would answer. */
export class MemoryLog {
  readonly leaves: LeafEntry[] = [];
  readonly heads = new Map<string, { seq: number; hash: string | null }>();
  /** Complete perfect subtrees: levels[l][i]. */
  private readonly levels: Buffer[][] = [[]];

  constructor(readonly key: TestKey = testKey()) {}

  private push(entry: LeafEntry): number {
    const index = this.leaves.length;
    this.leaves.push(entry);
    this.levels[0]!.push(entry.hash);
    for (let level = 0, at = index; at % 2 === 1; level += 1, at = (at - 1) / 2) {
      (this.levels[level + 1] ??= []).push(nodeHash(this.levels[level]![at - 1]!, this.levels[level]![at]!));
    }
    return index;
  }

  /** Appends `count` events to the session's chain; answers their event strings. */
  append(sessionId: string, count: number): string[] {
    const head = this.heads.get(sessionId) ?? { seq: -1, hash: null };
    const added: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const seq = head.seq + 1;
      const text = chainEvent(sessionId, seq, head.hash);
      const hash = sha256(text);
      this.push({ hash: leafHash(hash), sessionId, eventId: `${sessionId}-e${seq}`, event: text, tombstone: null });
      head.seq = seq;
      head.hash = hash.toString('hex');
      added.push(text);
    }
    this.heads.set(sessionId, head);
    return added;
  }

  /** Retention: the session's events are gone, a signed tombstone leaf records them. */
  retain(sessionId: string): void {
    const head = this.heads.get(sessionId)!;
    const body = canonicalJson({
      v: 1,
      kind: 'tombstone',
      log: OBSERVE_LOG,
      sessionId,
      headSeq: head.seq,
      headHash: head.hash,
      eventCount: head.seq + 1,
      reason: 'retention',
      timestamp: '2026-11-23T00:00:00.000Z',
      keyId: this.key.keyId,
    });
    const signature = signBytes(this.key, Buffer.from(body, 'utf8'));
    for (const leaf of this.leaves) if (leaf.sessionId === sessionId && leaf.tombstone === null) leaf.event = null;
    this.heads.delete(sessionId);
    this.push({ hash: leafHash(Buffer.from(body, 'utf8')), sessionId, eventId: null, event: null, tombstone: { body, signature } });
  }

  private read = (level: number, index: number): Buffer => this.levels[level]![index]!;

  checkpoint(size = this.leaves.length, key: TestKey = this.key): Checkpoint {
    const unsigned = { treeSize: size, rootHash: treeRoot(size, this.read).toString('hex'), timestamp: '2026-11-23T00:00:00.000Z', keyId: key.keyId };
    return { ...unsigned, signature: signBytes(key, checkpointMessage(OBSERVE_LOG, unsigned)) };
  }

  consistency(from: number, to: number): string[] {
    return from === 0 || from === to ? [] : consistencyProof(from, to, this.read).map((hash) => hash.toString('hex'));
  }

  bundle(sessionId: string, since?: number): Bundle {
    const checkpoint = this.checkpoint();
    const events: string[] = [];
    const leaves: Bundle['leaves'] = [];
    this.leaves.forEach((leaf, index) => {
      if (leaf.sessionId !== sessionId || leaf.event === null) return;
      events.push(leaf.event);
      leaves.push({ index, proof: inclusionProof(index, checkpoint.treeSize, this.read).map((hash) => hash.toString('hex')) });
    });
    const head = this.heads.get(sessionId) ?? { seq: -1, hash: null };
    return {
      log: OBSERVE_LOG,
      sessionId,
      head: { seq: head.seq, hash: head.hash },
      events,
      leaves,
      checkpoint,
      publicKey: this.key.publicKey.toString('base64'),
      certificates: [],
      erasures: [],
      tombstones: [],
      ...(since === undefined ? {} : { consistency: { from: since, to: checkpoint.treeSize, proof: this.consistency(since, checkpoint.treeSize) } }),
    };
  }

  walked(): WalkedLeaf[] {
    return this.leaves.map((leaf, index) => ({
      index,
      leafHash: leaf.hash.toString('hex'),
      sessionId: leaf.sessionId,
      eventId: leaf.eventId,
      event: leaf.event,
      tombstone: leaf.tombstone,
    }));
  }
}
