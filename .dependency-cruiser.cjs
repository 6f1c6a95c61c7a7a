// The layer picture of docs/architecture.md ("Layers"), in code: `npm run lint:layers`
// (dependency-cruiser) fails on an import that breaks it; .ci/run runs it after lint.
// The SQL rule (SQL only in *.repo.ts and the db adapters) is an ESLint rule, in
// eslint.config.js, because it reads the code, not the imports.
//
// The top folders of src/ from the bottom up: a folder imports only folders below it, so
// no two folders import each other. Root modules: config.ts (the environment, read once)
// sits above the folders whose settings it parses; app.ts and main.ts assemble everything.
const LAYERS = [
  'platform',    // knows no payment concept; settings come in as arguments
  'web',         // server-rendered pages' toolkit (the src/web/ work; pages stay in their domain)
  'money',       // currencies, minor units, the amount bound: imports nothing of payd's
  'partners',    // the connector port and connectors: verify and parse, never apply
  'webhooks',    // outbox, dispatcher, merchant endpoints: imports no payments module
  'eligibility', // eligible solutions and per-entity rules
  'payments',    // sessions, payments, operations, lists, saved cards
  'links',       // payment links (a link opens a client session)
  'identity',    // the identity provider
  'admin',       // operator API: entities, API keys, demo bootstrap
  'checkout',    // widget, hosted page, 3-D Secure return
  'dashboard',   // the merchant dashboard
  'openapi',     // the API document: every route's schemas, finished into openapi.json
  'cli',         // clients of the public API
];
// Root modules: config.ts reads the environment (above the folders whose settings it
// parses, see config-above-folders); app.ts and main.ts assemble everything.
const ROOT_ABOVE_ALL = ['^src/app\\.ts$', '^src/main\\.ts$'];

// Temporary exceptions, each named: a file whose import breaks the layering today, what it
// may still import, and the work that removes it. Nothing else is added here to pass.
// None is left.
const EXCEPTIONS = [];

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const folder = (f) => `^src/${esc(f)}/`;

/** A rule, and for each of its exceptions the same rule less that exception's target. */
function withExceptions(rule) {
  const own = EXCEPTIONS.filter((e) => e.rule === rule.name && e.from.startsWith(rule.from.path.replace(/\\\.routes.*/, '')));
  const main = { ...rule, from: { ...rule.from, pathNot: own.map((e) => e.from) } };
  return [main, ...own.map((e) => ({ ...rule, comment: `${rule.comment} (temporary exception: ${e.from} -> ${e.to})`, from: { path: e.from }, to: { ...rule.to, pathNot: e.to } }))];
}

/** One rule per folder: it may not import a folder above it, nor app.ts or main.ts. */
const oneWay = LAYERS.flatMap((name, i) => withExceptions({
  name: 'folders-one-way',
  comment: `src/${name} imports only the folders below it (${LAYERS.slice(0, i).join(', ') || 'none'}): docs/architecture.md, Layers`,
  severity: 'error',
  from: { path: folder(name) },
  to: { path: [...LAYERS.slice(i + 1).map(folder), ...ROOT_ABOVE_ALL] },
}));

module.exports = {
  forbidden: [
    ...oneWay,
    {
      name: 'config-above-folders',
      comment: 'config.ts reads the environment and builds the settings; platform, partners and webhooks get theirs as arguments',
      severity: 'error',
      from: { path: ['^src/platform/', '^src/partners/', '^src/webhooks/', '^src/eligibility/'] },
      to: { path: '^src/config\\.ts$' },
    },
    {
      name: 'partners-never-payments',
      comment: 'a connector verifies and parses; applying a partner notification to a payment is the payments module\'s route',
      severity: 'error',
      from: { path: '^src/partners/' },
      to: { path: '^src/payments/' },
    },
    {
      name: 'webhooks-no-payments',
      comment: 'the outbox and the dispatcher know events, not payments; payments write into the outbox',
      severity: 'error',
      from: { path: '^src/webhooks/' },
      to: { path: '^src/payments/' },
    },
    ...withExceptions({
      name: 'routes-through-services',
      comment: 'a route (*.routes.ts, *.routes.tsx) reaches a repository (*.repo.ts) only through a service',
      severity: 'error',
      from: { path: '\\.routes\\.tsx?$' },
      to: { path: '\\.repo\\.ts$' },
    }),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
