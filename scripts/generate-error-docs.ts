// Writes docs/reference/errors.md, the error reference, from the two services' error catalogues
// (the one source of codes, statuses and messages): `npm run generate:error-docs`.
// scripts/error-docs.test.ts fails when the committed page differs from what this would write.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gateErrors } from '@vigil/gate';
import { observeErrors } from '@vigil/observe';
import type { ErrorSpec } from '@vigil/platform';

export const ERROR_REFERENCE_FILE = fileURLToPath(new URL('../docs/reference/errors.md', import.meta.url));

// Markdown table cell: pipes escaped, and angle brackets as entities so that the site's
// Vue-based build does not read `<L>` as an unclosed element.
const cell = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\|/g, '\\|');

/** One row per error, ordered by status then code. */
function table(catalogue: Record<string, ErrorSpec>): string {
  const rows = Object.values(catalogue)
    .sort((a, b) => a.status - b.status || a.code.localeCompare(b.code) || a.message.localeCompare(b.message))
    .map((spec) => `| \`${spec.code}\` | ${spec.status} | ${cell(spec.message)} | ${cell(spec.when ?? '')} |`);
  return ['| Code | Status | Message | When |', '|---|---|---|---|', ...rows].join('\n');
}

/** The page's exact text. */
export function errorReference(): string {
  return `<!-- Generated from packages/observe/src/errors.ts and packages/gate/src/errors.ts (the kit's own entries: packages/platform/src/errors.ts) by scripts/generate-error-docs.ts (npm run generate:error-docs); do not edit by hand. -->

# Error codes

Every error either service answers comes from its error catalogue; this page is generated from them.
The message in a body is often more precise than the catalogue's (it names the id, field or limit);
programs branch on the code and the status, people read the message. Validation errors carry
\`details\`, one \`{ path, message }\` per offending field.

The HTTP kit both services share answers other framework refusals of a request with the code of
the closest entry (\`invalid_json\`, \`payload_too_large\`, \`unsupported_media_type\`), and a
request the HTTP parser cannot read at all with 400 and the service's validation code.

## Observe

Body: \`{ "error": message, "code": code, "status": status, "details"?: [...] }\`. Each error has its own code.

${table(observeErrors)}

## Gate

Body: \`{ "error": { "code": code, "message": message, "details"?: [...] } }\`. The gate's specification
names one code per status for 400 (\`bad_request\`), 401 (\`unauthorized\`), 404 (\`not_found\`) and 409
(\`conflict\`), so the errors of those statuses share it and the message tells them apart; every
other code belongs to one error.

${table(gateErrors)}
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(dirname(ERROR_REFERENCE_FILE), { recursive: true });
  writeFileSync(ERROR_REFERENCE_FILE, errorReference());
  console.log(`wrote ${ERROR_REFERENCE_FILE}`);
}
