// Regenerates packages/sdk/src/generated/*.ts from the services' OpenAPI documents.
// Run: npm run generate -w @vigil/sdk   (or: node --import tsx packages/sdk/scripts/generate.ts)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSources } from '../src/codegen/generate.ts';

const src = join(import.meta.dirname, '..', 'src');
for (const [file, text] of Object.entries(await generateSources())) {
  writeFileSync(join(src, file), text);
  process.stdout.write(`wrote packages/sdk/src/${file} (${text.length} bytes)\n`);
}
