// payd command line: start the server (or one role of it), apply migrations, rotate keys.
import { parseArgs } from 'node:util';
import pino from 'pino';
import { buildApp, VERSION } from './app.ts';
import { type Config, ConfigError, loadConfig, type Role } from './config.ts';
import { openDb } from './platform/db/index.ts';
import type { Db } from './platform/db/index.ts';
import { migrate } from './platform/db/migrator.ts';
import { resolveMasterKey } from './platform/crypto/master-key.ts';
import { loggerOptions } from './platform/observability/logger.ts';
import { bootstrapDemo } from './admin/demo.ts';
import { armFaultPoint } from './platform/fault-points.ts';

const USAGE = `payd ${VERSION}

Usage:
  payd start [--role all|api|identity|worker]   start the server (migrations apply first)
  payd migrate                                  apply database migrations and exit
  payd keys rotate <access-token|redirection>   rotate a signing key
  payd help

Configuration comes from the environment; see README.md.`;

async function openMigrated(config: Config, log: pino.Logger): Promise<Db> {
  const db = await openDb(config);
  const applied = await migrate(db);
  if (applied.length) log.info({ applied }, 'migrations applied');
  return db;
}

async function start(config: Config, log: pino.Logger): Promise<void> {
  if (!config.databaseUrl) {
    log.warn(
      `running on the embedded database (PGlite) in ${config.dataDir}: for evaluation and development only. ` +
        'It does not fsync and serves one process. Production uses PostgreSQL: set DATABASE_URL.',
    );
  }
  armFaultPoint(config.faultKillAt);
  const db = await openMigrated(config, log);
  const master = resolveMasterKey(config.masterKey, config.dataDir);
  if (master.origin !== 'env' && config.databaseUrl) {
    log.warn(`PAYD_MASTER_KEY is not set: using ${master.file}. Every payd process on this database needs the same key; set PAYD_MASTER_KEY in production.`);
  }
  const app = await buildApp({ config, db, masterKey: master.key });
  const demo = config.demo ? await bootstrapDemo(app.services.entities) : undefined;
  if (config.role === 'all' || config.role === 'worker') {
    app.services.recovery.start(config.recoveryIntervalMs, (err) => log.error({ err }, 'recovery pass failed'));
    app.webhooks.dispatcher.start((err) => log.error({ err }, 'webhook dispatch failed'));
  }
  await app.listen({ port: config.port, host: config.host });

  console.log(`\npayd ${VERSION} (${config.role}) listening on ${config.baseUrl}`);
  console.log(`  API reference: ${config.baseUrl}/docs   OpenAPI: ${config.baseUrl}/openapi.json`);
  if (demo) {
    console.log('\nA demo merchant was created. Its API key is shown this once; keep it:');
    console.log(`  entity id: ${demo.entityId}`);
    console.log(`  API key:   ${demo.apiKey}`);
    console.log(`\nGet a token:\n  curl -s -X POST ${config.baseUrl}/oauth/token -H 'x-api-key: ${demo.apiKey}' -d grant_type=client_credentials\n`);
  }
  if (!config.databaseUrl) {
    console.log('Embedded database: for evaluation and development only. Production uses PostgreSQL (DATABASE_URL).\n');
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      log.error('shutdown grace period elapsed; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    try {
      await app.close();
      await db.close();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { role: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command = 'help', ...rest] = positionals;
  if (values.help || command === 'help') {
    console.log(USAGE);
    return;
  }
  const config = loadConfig(process.env, values.role ? { role: values.role as Role } : {});
  if (!['all', 'api', 'identity', 'worker'].includes(config.role)) throw new ConfigError(`--role must be all, api, identity or worker`);
  const log = pino(loggerOptions(config.logLevel));

  switch (command) {
    case 'start':
      return start(config, log);
    case 'migrate': {
      const db = await openMigrated(config, log);
      await db.close();
      console.log('migrations are up to date');
      return;
    }
    case 'keys': {
      const [action, purposeName] = rest;
      const { ACCESS_TOKEN_KEYS } = await import('./identity/oauth/access-tokens.ts');
      const { REDIRECTION_KEYS } = await import('./checkout/redirection-token.ts');
      const purpose = [ACCESS_TOKEN_KEYS, REDIRECTION_KEYS].find((p) => p.name === purposeName);
      if (action !== 'rotate' || !purpose) throw new ConfigError(USAGE);
      const { KeyStore } = await import('./platform/crypto/keystore.ts');
      const db = await openMigrated(config, log);
      const kid = await new KeyStore(db, resolveMasterKey(config.masterKey, config.dataDir).key).rotate(purpose);
      await db.close();
      console.log(`rotated ${purpose.name}: new kid ${kid}`);
      return;
    }
    default:
      throw new ConfigError(`unknown command "${command}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
