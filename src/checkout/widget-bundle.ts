// widget.js: the browser widget (src/checkout/widget/) bundled by esbuild once per
// process, on first use, and served from memory with an ETag.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

export interface Bundle {
  code: string;
  etag: string;
}

let bundle: Promise<Bundle> | undefined;

export function widgetBundle(): Promise<Bundle> {
  bundle ??= (async () => {
    const { build } = await import('esbuild');
    const out = await build({
      entryPoints: [fileURLToPath(new URL('./widget/widget.ts', import.meta.url))],
      bundle: true,
      write: false,
      format: 'iife',
      minify: true,
      target: ['es2020'],
      legalComments: 'none',
    });
    const code = out.outputFiles[0]!.text;
    return { code, etag: `"${createHash('sha256').update(code).digest('base64url').slice(0, 22)}"` };
  })();
  bundle.catch(() => {
    bundle = undefined;
  });
  return bundle;
}
