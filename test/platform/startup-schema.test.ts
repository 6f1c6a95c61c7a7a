// Start-up against the stored state: a master key that does not open the stored keys
// stops payd before migrations (and before a generated key is saved); --no-migrate
// (PAYD_NO_MIGRATE) checks that the schema holds exactly this payd's migrations instead
// of applying them. Real command (node bin/payd.js), one line on stderr, exit code 2.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { appliedVersions, assertOneLine, emptyPlace, freePort, runPayd, SERVER_MASTER_KEY, startPayd } from '../helpers/processes.ts';
import { loadMigrations, migrate } from '../../src/platform/db/migrator.ts';
import { KeyStore } from '../../src/platform/crypto/keystore.ts';
import { ACCESS_TOKEN_KEYS } from '../../src/identity/oauth/access-tokens.ts';
import pg from 'pg';
import { POSTGRES_URL } from '../helpers/db.ts';

describe('payd start-up on stored state', () => {
  let port: number;
  before(async () => {
    port = await freePort();
  });

  it('stops on a master key that does not open the stored keys, before migrations and before saving a key', async () => {
    const p = await emptyPlace();
    try {
      // A database one migration behind, with keys sealed by another master key.
      const db = await p.open();
      const all = loadMigrations();
      await migrate(db, all.slice(0, -1));
      await new KeyStore(db, randomBytes(32)).ensure(ACCESS_TOKEN_KEYS);
      await db.close();
      const before = await appliedVersions(p);

      const withEnv = await runPayd(['start'], { PORT: String(port), ...p.env, PAYD_MASTER_KEY: SERVER_MASTER_KEY });
      assertOneLine(withEnv, /^payd: The master key does not open the access-token-hs256 keys stored in this database: .*PAYD_MASTER_KEY/);
      // Without PAYD_MASTER_KEY payd would generate one in the data dir: it does not save it.
      const generated = await runPayd(['start'], { PORT: String(port), ...p.env });
      assertOneLine(generated, /^payd: The master key does not open the access-token-hs256 keys/);
      assert.equal(existsSync(path.join(p.env.PAYD_DATA_DIR!, 'master.key')), false, 'no master key file written');
      assert.deepEqual(await appliedVersions(p), before, 'no migration applied');
      assert.equal(before.includes(all.at(-1)!.version), false);
    } finally {
      await p.close();
    }
  });

  // A least-privilege runtime role (docs/operations.md) started without --no-migrate on
  // a database it may not migrate: one line and exit 2, not a stack (issue 45, item 5).
  // Roles are PostgreSQL's: a database of its own on the server even on the PGlite pass.
  it('stops with one line when a role that may not change the schema is started to migrate it', async () => {
    const name = `payd_t_${randomBytes(6).toString('hex')}`;
    const role = `payd_rt_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'rt-secret'`);
      const url = new URL(POSTGRES_URL);
      url.pathname = `/${name}`;
      const owner = new pg.Client({ connectionString: url.toString() });
      await owner.connect();
      // PostgreSQL 15 and later deny CREATE on public to other roles; older ones do not.
      await owner.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
      await owner.query(`GRANT CONNECT ON DATABASE ${name} TO ${role}`);
      await owner.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
      await owner.end();
      url.username = role;
      url.password = 'rt-secret';
      const run = await runPayd(['start'], { PORT: String(port), DATABASE_URL: url.toString(), PAYD_MASTER_KEY: SERVER_MASTER_KEY });
      assertOneLine(run, new RegExp(`^payd: the database role ${role} may not apply migrations \\(permission denied for schema public\\): apply them with \`payd migrate\` as the schema owner, then start this role with --no-migrate`));
      assert.doesNotMatch(run.stderr, /rt-secret/, 'never the password');
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  describe('--no-migrate (PAYD_NO_MIGRATE)', () => {
    it('stops on a database without payd schema and creates nothing', async () => {
      const p = await emptyPlace();
      try {
        // PGlite creates its data dir on opening; what counts is that no table appears.
        const run = await runPayd(['start', '--no-migrate'], { PORT: String(port), ...p.env, PAYD_MASTER_KEY: SERVER_MASTER_KEY });
        assertOneLine(run, /^payd: the database has no payd schema \(no schema_migrations table\): apply them with `payd migrate`/);
        const db = await p.open();
        try {
          const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
          assert.equal(rows[0]!.n, 0);
        } finally {
          await db.close();
        }
      } finally {
        await p.close();
      }
    });

    it('stops on a schema one migration behind, an edited migration or an unknown one, and changes nothing', async () => {
      const p = await emptyPlace();
      try {
        const all = loadMigrations();
        const last = all.at(-1)!;
        const db = await p.open();
        await migrate(db, all.slice(0, -1));
        await db.close();
        const label = `${String(last.version).padStart(4, '0')}_${last.name}`;

        const behind = await runPayd(['start'], { PORT: String(port), ...p.env, PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_NO_MIGRATE: 'true' });
        assertOneLine(behind, new RegExp(`^payd: the database schema is not current: migrations ${label} are not applied; apply them with \`payd migrate\``));
        assert.equal((await appliedVersions(p)).includes(last.version), false, 'the missing migration was not applied');

        const db2 = await p.open();
        await migrate(db2, all);
        await db2.query("UPDATE schema_migrations SET checksum = 'edited' WHERE version = $1", [all[0]!.version]);
        await db2.close();
        const edited = await runPayd(['start', '--no-migrate'], { PORT: String(port), ...p.env, PAYD_MASTER_KEY: SERVER_MASTER_KEY });
        assertOneLine(edited, /^payd: the database applied other versions of migrations 0001_foundation than this payd has/);

        const db3 = await p.open();
        await db3.query('UPDATE schema_migrations SET checksum = $2 WHERE version = $1', [all[0]!.version, all[0]!.checksum]);
        await db3.query("INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'from_the_future', 'x')");
        await db3.close();
        const unknown = await runPayd(['start', '--no-migrate'], { PORT: String(port), ...p.env, PAYD_MASTER_KEY: SERVER_MASTER_KEY });
        assertOneLine(unknown, /^payd: the database has migrations this payd does not know \(9999_from_the_future\)/);
      } finally {
        await p.close();
      }
    });

    it('starts on a current schema and serves', async () => {
      const p = await emptyPlace();
      try {
        const db = await p.open();
        await migrate(db);
        await db.close();
        const server = await startPayd({ ...p.env, PAYD_NO_MIGRATE: 'true' });
        try {
          assert.equal((await fetch(`${server.base}/readyz`)).status, 200);
        } finally {
          assert.equal(await server.stop(), 0);
        }
      } finally {
        await p.close();
      }
    });
  });
});
