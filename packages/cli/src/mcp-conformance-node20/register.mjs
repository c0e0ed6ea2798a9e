// `node --import` this to run @modelcontextprotocol/conformance 0.1.16 on Node 20: its bundle imports
// fs.globSync (Node 22), which only its tier-check command calls. The server runner does not.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
