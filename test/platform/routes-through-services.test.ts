// Routes reach repositories only through services (docs/architecture.md, Layers). The
// layering checker (.dependency-cruiser.cjs, routes-through-services) sees a route that
// imports a *.repo.ts file, but not a route that calls a function of another module which
// takes the database (a Queryable or a Db) and so works at the repository's level: that
// is an import of an ordinary module. This test reads the calls with the TypeScript
// compiler: no function taking a Queryable or a Db is called from a *.routes.ts(x) file.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../..', import.meta.url));
const DATABASE = /\b(Queryable|Db)\b/;

const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
  const p = path.join(dir, name);
  return statSync(p).isDirectory() ? walk(p) : /\.tsx?$/.test(p) && !p.endsWith('.d.ts') ? [p] : [];
});

/** The parameters of the function a call reaches, when it is declared in another file. */
function calleeParameters(checker: ts.TypeChecker, call: ts.CallExpression): readonly ts.ParameterDeclaration[] | undefined {
  let symbol = checker.getSymbolAtLocation(call.expression);
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const decl = symbol?.valueDeclaration;
  if (!decl || decl.getSourceFile() === call.getSourceFile()) return undefined;
  if (ts.isFunctionDeclaration(decl)) return decl.parameters;
  if (ts.isVariableDeclaration(decl) && decl.initializer && (ts.isArrowFunction(decl.initializer) || ts.isFunctionExpression(decl.initializer))) return decl.initializer.parameters;
  return undefined;
}

/** Each call, in a *.routes.ts(x) file under `dir`, of another module's function that takes the database. */
function databaseCallsFromRoutes(dir: string): string[] {
  const files = walk(path.join(dir, 'src'));
  const program = ts.createProgram({
    rootNames: files.filter((f) => /\.routes\.tsx?$/.test(f)),
    options: { allowImportingTsExtensions: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, jsx: ts.JsxEmit.ReactJSX, skipLibCheck: true, noResolve: false },
  });
  const checker = program.getTypeChecker();
  const found: string[] = [];
  for (const sf of program.getSourceFiles()) {
    if (!/\.routes\.tsx?$/.test(sf.fileName) || sf.fileName.includes('node_modules')) continue;
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node)) {
        const params = calleeParameters(checker, node);
        if (params?.some((p) => p.type && DATABASE.test(p.type.getText()))) {
          found.push(`${path.relative(dir, sf.fileName)}: ${node.expression.getText()}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found.sort();
}

describe('routes reach the database only through services', () => {
  it('finds a planted route that calls a function taking the database', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'payd-routes-'));
    try {
      const files: Record<string, string> = {
        'src/platform/db/index.ts': 'export interface Queryable { query(sql: string): Promise<unknown> }\nexport interface Db extends Queryable { close(): Promise<void> }\n',
        'src/shop/grants.ts': "import type { Queryable } from '../platform/db/index.ts';\nexport async function enable(q: Queryable, id: string) { await q.query(id); }\nexport const pure = (id: string) => id;\n",
        'src/shop/shop.service.ts': "import type { Db } from '../platform/db/index.ts';\nimport { enable } from './grants.ts';\nexport class ShopService { constructor(private readonly db: Db) {}\n  enable(id: string) { return enable(this.db, id); } }\n",
        'src/shop/good.routes.ts': "import type { ShopService } from './shop.service.ts';\nimport { pure } from './grants.ts';\nexport const good = (shop: ShopService) => shop.enable(pure('a'));\n",
        'src/shop/planted.routes.ts': "import type { Db } from '../platform/db/index.ts';\nimport { enable } from './grants.ts';\nexport const planted = (db: Db) => enable(db, 'a');\n",
      };
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        writeFileSync(path.join(dir, file), text);
      }
      assert.deepEqual(databaseCallsFromRoutes(dir), ['src/shop/planted.routes.ts: enable']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('holds in src/', () => {
    assert.deepEqual(databaseCallsFromRoutes(root), []);
  });
});
