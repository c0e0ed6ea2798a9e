import { parseBundle, verifyBundle } from './bundle.ts';
import { MemoryLog } from './fixture.ts';
import { InclusionBatch } from './tree.ts';
import { leafHash } from '@vigil/platform';
import { createHash } from 'node:crypto';
const log = new MemoryLog();
for (let i = 0; i < 10_000; i += 1) { log.append('big', 1); if (i % 3 === 0) log.append(`other-${i % 17}`, 1); }
const b = parseBundle(JSON.parse(JSON.stringify({format:'vigil-audit-bundle/1',log:'vigil-observe',...log.bundle('big')})));
for (let r = 0; r < 4; r++) {
  let t = performance.now(); verifyBundle(b); const c = performance.now() - t;
  t = performance.now();
  const batch = new InclusionBatch(b.checkpoint.treeSize, Buffer.from(b.checkpoint.rootHash, 'hex'));
  const hashes = b.events.map((e) => leafHash(createHash('sha256').update(e).digest()));
  const h = performance.now() - t; t = performance.now();
  b.leaves.forEach((l, i) => batch.verify(l!.index, hashes[i]!, l!.proof));
  const d = performance.now() - t;
  console.log({ verify: c.toFixed(1), hashes: h.toFixed(1), batch: d.toFixed(1) });
}
