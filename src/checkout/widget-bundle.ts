// widget.js: the browser widget (src/checkout/widget/), served from memory with an ETag.
// `npm run build` bundles it once into dist/checkout/widget.bundle.js, which the compiled
// server reads; run from the TypeScript sources (development, tests), it is bundled by
// esbuild (a devDependency) on first use instead.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export interface Bundle {
  code: string;
  etag: string;
}

/** Next to the compiled module: dist/checkout/widget.bundle.js. */
export const PREBUILT_WIDGET = new URL('./widget.bundle.js', import.meta.url);

/** Bundles the widget with esbuild (npm run build, or the first request when run from the sources). */
export async function bundleWidget(entry = fileURLToPath(new URL('./widget/widget.ts', import.meta.url))): Promise<string> {
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

let bundle: Promise<Bundle> | undefined;

export function widgetBundle(): Promise<Bundle> {
  bundle ??= (async () => {
    const code = await readFile(PREBUILT_WIDGET, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return bundleWidget();
      throw err;
    });
    return { code, etag: `"${createHash('sha256').update(code).digest('base64url').slice(0, 22)}"` };
  })();
  bundle.catch(() => {
    bundle = undefined;
  });
  return bundle;
}
