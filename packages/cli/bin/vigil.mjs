#!/usr/bin/env node
// Runs the compiled CLI (packages/cli/dist), built first when it is missing or older than its
// sources (packages/cli/build.mjs).
import { compiledEntry } from '../build.mjs';

let entry;
try {
  entry = await compiledEntry();
} catch (error) {
  process.stderr.write(`vigil: could not build packages/cli/dist: ${error.errors ? 'see the errors above' : error.message}\n`);
  process.exit(1);
}
await import(entry);
