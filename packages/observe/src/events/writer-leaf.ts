// A writer leaf's data (docs/audit.md#who-wrote-an-event): the one recipe the service writes and
// `vigil verify` reads (@vigil/observe/writer-leaf), pure so that the verifier loads nothing else.
import { canonicalJson } from '@vigil/platform';

const WRITER_LEAF_KIND = 'event-writer';

/** A writer leaf's data: the UTF-8 bytes of `{events: [hex hash, …], kind: "event-writer", log, v: 1, writtenBy}` in canonical JSON. */
export function writerLeafBody(log: string, writtenBy: string, hashes: readonly string[]): string {
  return canonicalJson({ events: hashes, kind: WRITER_LEAF_KIND, log, v: 1, writtenBy });
}

/** A writer leaf's data parsed, or undefined when the text is not a writer leaf of `log`. */
export function parseWriterLeaf(text: string, log: string): { writtenBy: string; events: string[] } | undefined {
  let body: { events?: unknown; kind?: unknown; log?: unknown; v?: unknown; writtenBy?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== 'object' || body.kind !== WRITER_LEAF_KIND || body.log !== log || body.v !== 1) return undefined;
  if (
    typeof body.writtenBy !== 'string' ||
    !Array.isArray(body.events) ||
    !body.events.every((hash) => typeof hash === 'string' && /^[0-9a-f]{64}$/.test(hash))
  )
    return undefined;
  return { writtenBy: body.writtenBy, events: body.events as string[] };
}
