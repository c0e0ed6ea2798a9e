#!/usr/bin/env node
// Re-verifies an exported Vigil session offline, with nothing but Node.js: no Vigil code, no
// dependencies. Usage:
//   curl -s -H "Authorization: Bearer $KEY" $VIGIL/api/sessions/$ID/timeline > timeline.json
//   curl -s -H "Authorization: Bearer $KEY" "$VIGIL/api/audit/verify?sessionId=$ID" > head.json   # optional
//   node verify-export.mjs timeline.json [head.json]
// Exit code 0: the chain verifies; 1: it does not (the first broken position is printed).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

// RFC 8785 (JCS) for values that came out of JSON.parse: object keys sorted by UTF-16 code
// units, no whitespace, numbers and strings serialised as ECMAScript's JSON.stringify does.
function canonical(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
}

function linkHash(e) {
  const { id, seq, timestamp, sessionId, agentId, eventType, severity, payload, metadata, prevHash } = e;
  const envelope = { v: 1, id, seq, timestamp, sessionId, agentId, eventType, severity, payload, metadata, prevHash };
  return createHash('sha256').update(canonical(envelope)).digest('hex');
}

const [timelineFile, headFile] = process.argv.slice(2);
if (!timelineFile) {
  console.error('usage: node verify-export.mjs timeline.json [verify.json]');
  process.exit(2);
}
const events = [...JSON.parse(readFileSync(timelineFile, 'utf8')).events].sort((a, b) => a.seq - b.seq);
const head = headFile ? JSON.parse(readFileSync(headFile, 'utf8')).headHash : undefined;

function fail(position, reason) {
  console.log(`INVALID at seq ${position}: ${reason}`);
  process.exit(1);
}

let previous = null;
events.forEach((event, position) => {
  if (event.seq !== position) {
    if (position > 0 && event.seq === events[position - 1].seq) fail(position, `event ${event.id} repeats seq ${event.seq} (a duplicate)`);
    fail(position, `expected seq ${position}, found ${event.seq} (an event is missing)`);
  }
  if (event.prevHash !== previous) fail(position, "prevHash is not the previous event's hash");
  if (linkHash(event) !== event.hash) fail(position, 'hash does not match the event content');
  previous = event.hash;
});
if (head !== undefined && head !== previous) {
  // The recorded head inside the export: what follows it was never part of the recorded chain.
  const at = events.findIndex((event) => event.hash === head);
  if (at >= 0) fail(at + 1, `event ${events[at + 1].id} is stored past the recorded head`);
  fail(events.length, 'the last event is not the recorded head (events missing at the end)');
}
console.log(`VALID: ${events.length} events, head ${previous}`);
