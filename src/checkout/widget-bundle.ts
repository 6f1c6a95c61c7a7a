// The browser scripts of the checkout, served from memory: widget.js (the widget a
// merchant page mounts, src/checkout/widget/widget.ts) and card-frame.js (the card frame's
// script, src/checkout/widget/card-frame.ts). `npm run build` bundles them once into
// dist/checkout/{name}.bundle.js, with the same compressed by brotli (.br) and gzip (.gz)
// beside it, which the compiled server reads; run from the TypeScript sources
// (development, tests), they are bundled by esbuild (a devDependency) and compressed on
// first use instead. Each form (br, gzip, as is) has its own ETag.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompressSync, constants, gunzipSync, gzip } from 'node:zlib';
import { packagePath, RUNNING_BUILT } from '../platform/paths.ts';

/** How a response body is encoded (Content-Encoding), identity for none. */
export type Encoding = 'br' | 'gzip' | 'identity';

/** A text served in every encoding, each with its ETag; version names the text (for versioned URLs: ?v=). */
export interface Compressed {
  version: string;
  forms: Record<Encoding, { body: Buffer; etag: string }>;
}

/** A bundle as served: its code and its compressed forms. */
export interface Bundle extends Compressed {
  code: string;
}

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/** brotli at its best (a browser script is compressed once, served many times), text mode. */
export const compressBrotli = (text: string | Buffer): Promise<Buffer> =>
  brotli(text, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } });
export const compressGzip = (text: string | Buffer): Promise<Buffer> => gzipped(text, { level: 9 });

/** A text's forms; br and gzip given (read from dist/) or made here. */
export async function compressedForms(text: string, given: { br?: Buffer; gzip?: Buffer } = {}): Promise<Compressed> {
  const body = Buffer.from(text);
  const version = createHash('sha256').update(body).digest('base64url').slice(0, 22);
  const [br, gz] = await Promise.all([given.br ?? compressBrotli(body), given.gzip ?? compressGzip(body)]);
  return {
    version,
    forms: {
      br: { body: br, etag: `"${version}-br"` },
      gzip: { body: gz, etag: `"${version}-gz"` },
      identity: { body, etag: `"${version}"` },
    },
  };
}

export type BrowserScript = 'widget' | 'card-frame';
export const BROWSER_SCRIPTS: readonly BrowserScript[] = ['widget', 'card-frame'];

/** Where npm run build writes a script's bundle (read when payd runs built). */
export const prebuiltPath = (name: BrowserScript) => packagePath('dist', 'checkout', `${name}.bundle.js`);
/** ...and its brotli and gzip forms. */
export const prebuiltCompressedPath = (name: BrowserScript, encoding: 'br' | 'gzip') => `${prebuiltPath(name)}.${encoding === 'br' ? 'br' : 'gz'}`;
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

/** The compressed forms npm run build wrote, when they are there and are of this code (else made again). */
async function prebuiltForms(name: BrowserScript, code: string): Promise<{ br?: Buffer; gzip?: Buffer }> {
  const read = (encoding: 'br' | 'gzip') => readFile(prebuiltCompressedPath(name, encoding)).catch(() => undefined);
  const [br, gz] = await Promise.all([read('br'), read('gzip')]);
  return {
    ...(br && brotliDecompressSync(br).toString() === code ? { br } : {}),
    ...(gz && gunzipSync(gz).toString() === code ? { gzip: gz } : {}),
  };
}

export function browserBundle(name: BrowserScript): Promise<Bundle> {
  let bundle = bundles.get(name);
  if (bundle) return bundle;
  bundle = (async () => {
    const built = RUNNING_BUILT
      ? await readFile(prebuiltPath(name), 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      })
      : undefined;
    const code = built ?? await bundleWidget(entryPath(name));
    return { code, ...await compressedForms(code, built ? await prebuiltForms(name, code) : {}) };
  })();
  bundles.set(name, bundle);
  bundle.catch(() => bundles.delete(name));
  return bundle;
}

export const widgetBundle = () => browserBundle('widget');
