// The layering checker (issue 41): `npm run lint:layers` (dependency-cruiser, the rules in
// .dependency-cruiser.cjs) and the SQL rule of eslint.config.js fail on a planted
// violation. The planted files live in a temporary directory laid out like src/, cruised
// with the repository's own rules, so the real tree is never touched.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../..', import.meta.url));
const rules = createRequire(import.meta.url)(path.join(root, '.dependency-cruiser.cjs')) as { forbidden: unknown[] };

/** Cruises a tree of files (path -> source) with the repository's rules; the violated rule names, sorted. */
async function violations(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'payd-layering-'));
  try {
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    const result = await cruise(['src'], {
      baseDir: dir, validate: true, ruleSet: { forbidden: rules.forbidden } as never, tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
    });
    const out = result.output as { summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> } };
    return out.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the layering checker', () => {
  it('passes a tree that keeps the layers', async () => {
    assert.deepEqual(await violations({
      'src/platform/db/index.ts': 'export const x = 1;\n',
      'src/payments/lists.service.ts': "import { x } from '../platform/db/index.ts';\nexport const y = x;\n",
      'src/payments/lists.routes.ts': "import { y } from './lists.service.ts';\nexport const z = y;\n",
    }), []);
  });

  it('fails on each planted violation, naming the rule', async () => {
    assert.deepEqual(await violations({
      'src/config.ts': 'export const c = 1;\n',
      'src/payments/payments.service.ts': 'export const s = 1;\n',
      'src/payments/payments.repo.ts': 'export const r = 1;\n',
      // platform imports a domain folder and config.ts
      'src/platform/planted.ts': "import { s } from '../payments/payments.service.ts';\nimport { c } from '../config.ts';\nexport const p = s + c;\n",
      // partners and webhooks import payments
      'src/partners/planted.ts': "import { s } from '../payments/payments.service.ts';\nexport const q = s;\n",
      'src/webhooks/planted.ts': "import { s } from '../payments/payments.service.ts';\nexport const w = s;\n",
      // a route reads a repository
      'src/payments/planted.routes.ts': "import { r } from './payments.repo.ts';\nexport const t = r;\n",
    }), [
      'config-above-folders: src/platform/planted.ts -> src/config.ts',
      'folders-one-way: src/partners/planted.ts -> src/payments/payments.service.ts',
      'folders-one-way: src/platform/planted.ts -> src/payments/payments.service.ts',
      'folders-one-way: src/webhooks/planted.ts -> src/payments/payments.service.ts',
      'partners-never-payments: src/partners/planted.ts -> src/payments/payments.service.ts',
      'routes-through-services: src/payments/planted.routes.ts -> src/payments/payments.repo.ts',
      'webhooks-no-payments: src/webhooks/planted.ts -> src/payments/payments.service.ts',
    ]);
  });

  it('fails when two top folders import each other', async () => {
    const found = await violations({
      'src/links/links.service.ts': "import { s } from '../payments/payments.service.ts';\nexport const l = s;\n",
      'src/payments/payments.service.ts': "import { l } from '../links/links.service.ts';\nexport const s = l;\n",
    });
    assert.deepEqual(found, ['folders-one-way: src/payments/payments.service.ts -> src/links/links.service.ts']);
  });

  it('finds SQL outside *.repo.ts files and the db adapters (eslint.config.js)', async () => {
    const eslint = new ESLint({ cwd: root });
    const source = "export const read = (q: { query(s: string): unknown }) => q.query('SELECT id FROM payments WHERE id = $1');\n";
    const messages = async (filePath: string) => (await eslint.lintText(source, { filePath: path.join(root, filePath) }))
      .flatMap((r) => r.messages.map((m) => m.ruleId));
    assert.deepEqual(await messages('src/payments/planted.ts'), ['no-restricted-syntax']);
    assert.deepEqual(await messages('src/payments/planted.repo.ts'), []);
    assert.deepEqual(await messages('src/platform/db/planted.ts'), []);
    const template = 'export const t = (table: string) => `DELETE FROM ${table} WHERE id = $1`;\n';
    assert.deepEqual((await eslint.lintText(template, { filePath: path.join(root, 'src/webhooks/planted.ts') }))[0]!.messages.map((m) => m.ruleId), ['no-restricted-syntax']);
  });

  it('finds AsyncLocalStorage in the server, outside the tracing SDK (eslint.config.js)', async () => {
    const eslint = new ESLint({ cwd: root });
    const source = "import { AsyncLocalStorage } from 'node:async_hooks';\nexport const context = new AsyncLocalStorage<{ id: string }>();\n";
    const messages = async (filePath: string) => (await eslint.lintText(source, { filePath: path.join(root, filePath) }))
      .flatMap((r) => r.messages.map((m) => m.ruleId));
    assert.deepEqual(await messages('src/platform/observability/planted.ts'), ['no-restricted-imports']);
    assert.deepEqual(await messages('src/platform/observability/otel-sdk.ts'), []);
  });
});
