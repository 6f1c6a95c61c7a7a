// `payd <command> --help` prints that command's usage and exits 0 without starting the
// command (issue 43): `payd listen --help` used to fail on an unknown option, `payd payments
// --help` asked for an API key, and `payd start --help` printed the list of every command.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const dataDir = mkdtempSync(path.join(tmpdir(), 'payd-help-'));

/**
 * Runs bin/payd.js (dist/ when it is current, else the sources: bin-choice.test.ts) with
 * no API key and no database configured. A command
 * that starts instead of printing its usage would not end: the timeout is a guard (its
 * kill fails the test), not a measure.
 */
const payd = (args: string[]) => new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
  execFile(process.execPath, ['bin/payd.js', ...args], {
    env: { PATH: process.env.PATH ?? '', PAYD_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' },
    timeout: 60_000,
  }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }));
});

const COMMANDS = ['start', 'migrate', 'keys', 'login', 'listen', 'trigger', 'payments', 'events', 'webhook-endpoints'];

describe('payd <command> --help', () => {
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('prints each command\'s own usage and exits 0, with --help, -h and payd help <command>', async () => {
    for (const command of COMMANDS) {
      for (const args of [[command, '--help'], [command, '-h'], ['help', command]]) {
        const r = await payd(args);
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stderr, '', args.join(' '));
        assert.ok(r.stdout.startsWith(`Usage: payd ${command}`), `${args.join(' ')} printed:\n${r.stdout}`);
        // That command's usage, not the list of all of them.
        for (const other of COMMANDS.filter((c) => c !== command)) assert.doesNotMatch(r.stdout, new RegExp(`^Usage: payd ${other}\\b|^ {2}payd ${other} `, 'm'), args.join(' '));
      }
    }
    // Nothing was started: no database was made in the data directory.
    assert.deepEqual(readdirSync(dataDir), []);
  });

  it('answers --help after a subcommand, its arguments or an option the command takes', async () => {
    for (const [args, command] of [
      [['payments', 'capture', '0c5a81bb-0000-4000-8000-000000000000', '--help'], 'payments'],
      [['keys', 'rotate', '--help'], 'keys'],
      [['listen', '--forward-to', 'http://localhost:4243/webhooks', '--help'], 'listen'],
      [['webhook-endpoints', 'create', '-h'], 'webhook-endpoints'],
      [['--role', 'api', 'start', '--help'], 'start'],
    ] as const) {
      const r = await payd([...args]);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stdout.startsWith(`Usage: payd ${command}`), `${args.join(' ')} printed:\n${r.stdout}`);
    }
  });

  it('lists every command for payd --help and payd help, and tells an unknown command with exit code 2', async () => {
    for (const args of [['--help'], ['help'], []]) {
      const r = await payd(args);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^payd \d+\.\d+\.\d+\n/);
      for (const command of COMMANDS) assert.match(r.stdout, new RegExp(`^ {2}payd ${command}\\b`, 'm'), command);
    }
    const unknown = await payd(['explode', '--help']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^payd: unknown command "explode"/);
  });
});
