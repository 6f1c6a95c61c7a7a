// Where payd's files are. payd runs from three layouts: the TypeScript sources (src/,
// through tsx: development and tests), the compiled modules (dist/, tsc: build steps) and
// the one-file server bundle (dist/payd.js: `payd start`). A path written relative to a
// module's own location would differ between them, so files are found from the package
// root instead: the nearest directory above this module with payd's package.json.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(import.meta.url);

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'payd') return dir;
    if (path.dirname(dir) === dir) throw new Error(`payd's package.json not found above ${from}`);
  }
}

/** The package's root: package.json, migrations/, dist/. */
export const PACKAGE_ROOT = findRoot(path.dirname(here));

/** A path under the package root. */
export const packagePath = (...segments: string[]): string => path.join(PACKAGE_ROOT, ...segments);

/** True when running built code (dist/), false from the TypeScript sources. */
export const RUNNING_BUILT = here.startsWith(packagePath('dist') + path.sep);
