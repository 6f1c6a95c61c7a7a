#!/usr/bin/env node
// The payd command. It is the server process itself (no child process): tsx's loader is
// registered in this process and runs the TypeScript sources, so a supervisor's SIGTERM
// reaches payd directly (see docs/operations.md, Production command).
import { readFileSync } from 'node:fs';

const [first] = process.argv.slice(2);
if (first === '--version' || first === '-v' || first === 'version') {
  // Answered before the TypeScript loader and the sources load.
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  console.log(pkg.version);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
}
