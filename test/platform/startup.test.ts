// Start-up errors of the real command (node bin/payd.js): each is one line on stderr that
// names the variable, exit code 2, and comes before any side effect (no data directory,
// no table created). --version answers at once.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { assertOneLine, emptyPlace, freePort, runPayd, startPayd } from '../helpers/processes.ts';
import { createPgTestDb } from '../faults/db-fixture.ts';
import { VERSION } from '../../src/app.ts';

describe('payd start-up', () => {
  let port: number;
  before(async () => {
    port = await freePort();
  });

  it('--version prints the version and exits 0, before loading the sources', async () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    assert.equal(VERSION, pkg.version);
    for (const flag of ['--version', '-v', 'version']) {
      const run = await runPayd([flag], {});
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, `${pkg.version}\n`);
      assert.equal(run.stderr, '');
    }
  });

  const invalid: [string, string[], Record<string, string>, RegExp][] = [
    ['DATABASE_URL not a URL', ['start'], { DATABASE_URL: 'not-a-url' }, /^payd: DATABASE_URL must be a postgres:/],
    ['DATABASE_URL of another scheme', ['start'], { DATABASE_URL: 'mysql://db/payd' }, /^payd: DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/],
    ['LOG_LEVEL unknown', ['start'], { LOG_LEVEL: 'verbose' }, /^payd: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/],
    ['PORT out of range', ['start'], { PORT: '70000' }, /^payd: PORT must be an integer between 0 and 65535, got "70000"/],
    ['PORT not a number', ['start'], { PORT: 'http' }, /^payd: PORT must be an integer/],
    ['PAYD_MASTER_KEY malformed', ['start'], { PAYD_MASTER_KEY: 'c2hvcnQ=' }, /^payd: PAYD_MASTER_KEY must be 32 bytes encoded in base64/],
    ['PAYD_CONSOLE_ORIGIN not a URL', ['start'], { PAYD_CONSOLE_ORIGIN: 'console' }, /^payd: PAYD_CONSOLE_ORIGIN must be an http\(s\) URL/],
    ['PAYD_NO_MIGRATE not a boolean', ['start'], { PAYD_NO_MIGRATE: 'maybe' }, /^payd: PAYD_NO_MIGRATE must be true or false/],
    ['an unknown option', ['start', '--bogus'], {}, /^payd: Unknown option '--bogus'/],
    ['an unknown role', ['start', '--role', 'cashier'], {}, /^payd: --role must be all, api, identity or worker, got "cashier"/],
  ];
  for (const [what, args, env, pattern] of invalid) {
    it(`stops on ${what}: one line, exit 2, nothing created`, async () => {
      const p = await emptyPlace();
      try {
        const run = await runPayd(args, { PORT: String(port), ...p.env, ...env });
        assertOneLine(run, pattern);
        assert.ok(await p.untouched(), 'nothing was created');
      } finally {
        await p.close();
      }
    });
  }

  it('stops on a port in use before opening the database: "PORT n is in use", exit 2', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    const p = await emptyPlace();
    try {
      const run = await runPayd(['start'], { PORT: String(port), ...p.env });
      assertOneLine(run, new RegExp(`^payd: PORT ${port} is in use`));
      assert.ok(await p.untouched(), 'no data dir, no table, no migration');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
      await p.close();
    }
  });

  it('stops on a database it cannot reach: one line naming DATABASE_URL, without its password', async () => {
    const nobody = await freePort();
    const run = await runPayd(['start'], { PORT: String(port), DATABASE_URL: `postgres://payd:s3cret-pw@127.0.0.1:${nobody}/payd` });
    assertOneLine(run, /^payd: DATABASE_URL: cannot open the database at 127\.0\.0\.1:\d+\/payd: connection refused/);
    assert.doesNotMatch(run.stderr, /s3cret-pw/);
  });
  // Issue 43 item 7: a PostgreSQL start gave no hint on creating the first merchant.
  it('on a PostgreSQL database without a merchant, says how to create the first one', async () => {
    const db = await createPgTestDb();
    const logs: string[] = [];
    try {
      const server = await startPayd({ DATABASE_URL: db.url }, { logs });
      assert.equal(await server.stop(), 0);
    } finally {
      await db.close();
    }
    const text = logs.join('\n');
    assert.match(text, /No merchant yet\. Create the first one and its API key with the operator token/);
    assert.match(text, /POST http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/entities/);
  });
  // Issue 43's walkthrough: without PAYD_ADMIN_TOKEN that hint sent the operator to an
  // operator API that is off (404) without saying so.
  it('on a PostgreSQL database without a merchant nor PAYD_ADMIN_TOKEN, says to set the token first', async () => {
    const db = await createPgTestDb();
    const logs: string[] = [];
    try {
      const server = await startPayd({ DATABASE_URL: db.url, PAYD_ADMIN_TOKEN: '' }, { logs });
      const res = await fetch(`${server.base}/admin/v1/entities`, {
        method: 'POST', headers: { authorization: 'Bearer ', 'content-type': 'application/json' }, body: '{"name": "My shop"}',
      });
      assert.equal(res.status, 404, 'the operator API is off');
      assert.equal(await server.stop(), 0);
    } finally {
      await db.close();
    }
    const text = logs.join('\n');
    assert.match(text, /No merchant yet, and the operator API that creates merchants is off: PAYD_ADMIN_TOKEN is not set\. Restart payd with PAYD_ADMIN_TOKEN set/);
    assert.doesNotMatch(text, /Create the first one and its API key with the operator token/);
    assert.match(text, /POST http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/entities/);
  });
});
