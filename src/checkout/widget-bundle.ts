// widget.js: the browser widget (src/checkout/widget/), served from memory with an ETag.
// `npm run build` bundles it once into dist/checkout/widget.bundle.js, which the compiled
// server reads; run from the TypeScript sources (development, tests), it is bundled by
// esbuild (a devDependency) on first use instead.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { packagePath, RUNNING_BUILT } from '../platform/paths.ts';

export interface Bundle {
  code: string;
  etag: string;
}

/** Written by npm run build; read when payd runs built (from the sources, the widget is bundled on first use). */
export const PREBUILT_WIDGET = packagePath('dist', 'checkout', 'widget.bundle.js');

/** Bundles the widget with esbuild (npm run build, or the first request when run from the sources). */
export async function bundleWidget(entry = packagePath('src', 'checkout', 'widget', 'widget.ts')): Promise<string> {
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
    const code = RUNNING_BUILT
      ? await readFile(PREBUILT_WIDGET, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return bundleWidget();
        throw err;
      })
      : await bundleWidget();
    return { code, etag: `"${createHash('sha256').update(code).digest('base64url').slice(0, 22)}"` };
  })();
  bundle.catch(() => {
    bundle = undefined;
  });
  return bundle;
}
