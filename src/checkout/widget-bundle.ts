// The browser scripts of the checkout, served from memory with an ETag: widget.js (the
// widget a merchant page mounts, src/checkout/widget/widget.ts) and card-frame.js (the
// card frame's script, src/checkout/widget/card-frame.ts). `npm run build` bundles them
// once into dist/checkout/{name}.bundle.js, which the compiled server reads; run from the
// TypeScript sources (development, tests), they are bundled by esbuild (a devDependency)
// on first use instead.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { packagePath, RUNNING_BUILT } from '../platform/paths.ts';

export interface Bundle {
  code: string;
  etag: string;
}

export type BrowserScript = 'widget' | 'card-frame';
export const BROWSER_SCRIPTS: readonly BrowserScript[] = ['widget', 'card-frame'];

/** Where npm run build writes a script's bundle (read when payd runs built). */
export const prebuiltPath = (name: BrowserScript) => packagePath('dist', 'checkout', `${name}.bundle.js`);
export const PREBUILT_WIDGET = prebuiltPath('widget');

/** A script's entry point in the sources. */
export const entryPath = (name: BrowserScript) => packagePath('src', 'checkout', 'widget', `${name}.ts`);

/** Bundles a browser script with esbuild (npm run build, or the first request when run from the sources). */
export async function bundleWidget(entry = entryPath('widget')): Promise<string> {
  const { build } = await import('esbuild');
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'iife',
    minify: true,
    target: ['es2020'],
    legalComments: 'none',
  });
  return out.outputFiles[0]!.text;
}

const bundles = new Map<BrowserScript, Promise<Bundle>>();

export function browserBundle(name: BrowserScript): Promise<Bundle> {
  let bundle = bundles.get(name);
  if (bundle) return bundle;
  bundle = (async () => {
    const code = RUNNING_BUILT
      ? await readFile(prebuiltPath(name), 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return bundleWidget(entryPath(name));
        throw err;
      })
      : await bundleWidget(entryPath(name));
    return { code, etag: `"${createHash('sha256').update(code).digest('base64url').slice(0, 22)}"` };
  })();
  bundles.set(name, bundle);
  bundle.catch(() => bundles.delete(name));
  return bundle;
}

export const widgetBundle = () => browserBundle('widget');
