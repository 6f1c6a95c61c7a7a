// The server in a few files: src/main.ts and every module it imports, its dependencies
// included, bundled by esbuild into <outdir>/payd.js and the chunks it loads (npm run
// build writes dist/server/, which `payd start` runs). Node then loads a handful of files
// instead of ~600 modules: 0.4 s less per start here (issue 17, docs/performance.md).
// Left outside, loaded from node_modules as usual: packages that read files of their own
// at run time (PGlite's WASM and data, Swagger UI's pages), native ones (argon2,
// pg-native), the ones loaded only on use (nodemailer, stripe), and the build tools.
// The bundle finds payd's files from the package root (src/platform/paths.ts), so it must
// sit under the package's dist/.
export const SERVER_EXTERNALS = ['@electric-sql/pglite', '@node-rs/argon2', 'pg-native', 'nodemailer', 'stripe', '@fastify/swagger-ui', 'esbuild', 'tsx'];

export async function bundleServer(outdir, entry = 'src/main.ts') {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: { payd: entry },
    outdir,
    // The modules main.ts imports only when needed (the app, each database driver, the
    // developer commands) become chunks of their own: `payd --help` loads none of them.
    splitting: true,
    chunkNames: 'chunk-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: SERVER_EXTERNALS,
    // CommonJS dependencies call require() (on Node's own modules, mostly).
    banner: { js: "import { createRequire as __paydCreateRequire } from 'node:module'; const require = __paydCreateRequire(import.meta.url);" },
    logLevel: 'warning',
  });
}
