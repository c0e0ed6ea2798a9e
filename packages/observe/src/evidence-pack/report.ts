/** The pack's readable report: one self-contained, printable HTML file rendered from the parts' data. */
import type { EvidencePart } from './parts.ts';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function table(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  if (rows.length === 0) return '<p class="none">None in the period.</p>';
  const cell = (value: unknown) => escape(value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));
  return `<table><thead><tr>${columns.map((c) => `<th>${escape(c)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${columns.map((c) => `<td>${cell(row[c])}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

function summary(name: string, data: unknown): string {
  if (data === null) return '<p class="none">Not included: the service was not given.</p>';
  const value = data as Record<string, unknown>;
  if (name.startsWith('checkpoints-')) {
    const part = value as { log: string; checkpoints: { checkpoint: Record<string, unknown>; cosignatures: string[] }[]; consistency: unknown[] };
    return `<p>Log <code>${escape(part.log)}</code>: ${part.checkpoints.length} checkpoints, ${part.consistency.length} consistency proofs.</p>${table(
      part.checkpoints.map((listed) => ({ ...listed.checkpoint, cosignatures: listed.cosignatures.length })),
      ['treeSize', 'timestamp', 'rootHash', 'keyId', 'cosignatures'],
    )}`;
  }
  if (name === 'oversight') {
    const requests = (value.requests as { request: Record<string, unknown> }[]).map((r) => r.request);
    return `${table(requests, ['id', 'action', 'status', 'createdAt', 'decidedBy', 'decidedAt'])}<h3>Escalations</h3>${table(
      value.escalations as Record<string, unknown>[],
      ['requestId', 'action', 'timestamp', 'actor', 'details'],
    )}`;
  }
  if (name === 'retention') {
    const rows = (listed: unknown) =>
      ((listed ?? []) as { erasureId: string; leafIndex: number; body: string }[]).map((erasure) => {
        const leaf = JSON.parse(erasure.body) as {
          timestamp: string;
          reason: string;
          requestedBy: string;
          subject: string;
          events: unknown[];
          requests?: unknown[];
        };
        return {
          ...erasure,
          erasedAt: leaf.timestamp,
          reason: leaf.reason,
          requestedBy: leaf.requestedBy,
          subject: leaf.subject,
          events: leaf.events.length,
          requests: leaf.requests?.length ?? 0,
        };
      });
    return `<h3>Erasures (deletion receipts)</h3>${table(rows(value.erasures), ['erasureId', 'erasedAt', 'reason', 'requestedBy', 'subject', 'events', 'leafIndex'])}<h3>The gate's erasures</h3>${table(
      rows(value.gateErasures),
      ['erasureId', 'erasedAt', 'reason', 'requestedBy', 'subject', 'requests', 'events', 'leafIndex'],
    )}<h3>Retention tombstones</h3><pre>${escape(JSON.stringify({ observe: value.observe, gate: value.gate }, null, 2).slice(0, 20_000))}</pre>`;
  }
  if (name.startsWith('changes-')) return table(value.entries as Record<string, unknown>[], ['ts', 'actor', 'resource', 'resourceId', 'action']);
  if (name === 'controls') {
    const rows = (value.parts as { part: string; controls: Record<string, string[]> }[]).map((row) => ({
      part: row.part,
      ...Object.fromEntries(Object.entries(row.controls).map(([framework, list]) => [framework, list.join('; ')])),
    }));
    return table(rows, ['part', 'eu-ai-act', 'iso-42001', 'soc2', 'nist-ai-rmf']);
  }
  return `<pre>${escape(JSON.stringify(value, null, 2).slice(0, 20_000))}</pre>`;
}

export function renderReport(
  manifest: { period: { from: string; to: string }; agents: readonly string[]; createdAt: string },
  parts: readonly { part: EvidencePart; data: unknown; sha256: string }[],
): string {
  const sections = parts
    .map(
      ({ part, data, sha256 }) =>
        `<section><h2>${escape(part.title)}</h2><p class="describe">${escape(part.describe)}</p><p class="digest">parts/${escape(part.name)}.json · SHA-256 ${sha256}</p>${summary(part.name, data)}</section>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vigil evidence pack ${escape(manifest.period.from)} to ${escape(manifest.period.to)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#111}h1{font-size:1.6em}h2{font-size:1.2em;border-bottom:1px solid #999;margin-top:2em}
table{border-collapse:collapse;width:100%;font-size:12px}th,td{border:1px solid #bbb;padding:2px 4px;text-align:left;vertical-align:top;word-break:break-all}
pre{white-space:pre-wrap;font-size:11px;background:#f6f6f6;padding:.5em}.digest{font:11px monospace;color:#555}.none{color:#666;font-style:italic}
@media print{section{break-inside:avoid-page}body{margin:0}}
</style></head><body>
<h1>Vigil evidence pack</h1>
<p>Period ${escape(manifest.period.from)} to ${escape(manifest.period.to)}${manifest.agents.length > 0 ? `, agents ${escape(manifest.agents.join(', '))}` : ''}; built ${escape(manifest.createdAt)}.</p>
<p>This report is rendered from the pack's parts. It is not itself the evidence: check the pack with <code>vigil verify evidence FILE --public-key KEY</code>, which verifies the signed manifest, every part's digest, the checkpoints' signatures and the consistency proofs between them.</p>
${sections}
</body></html>
`;
}
