// payd command line: start the server (or one role of it), apply migrations, rotate keys.
//
// Start-up checks everything it can before any side effect, in this order: the
// configuration (src/config.ts), the port (bound for a moment, then released), the
// database (reached, and with --no-migrate its schema current), the master key (it opens
// the keys already stored). Only then migrations apply, a generated master key is saved,
// the server listens and the workers start. A failure the operator must fix is one line
// on stderr and exit code 2. The server's modules load only once the configuration is
// valid, so that a configuration error is told at once.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { parseArgs } from 'node:util';
import type pino from 'pino';
import { type Config, ConfigError, loadConfig, type Role } from './config.ts';
import type { Db } from './platform/db/index.ts';
import { checkSchema, migrate, SchemaError } from './platform/db/migrator.ts';
import { splitHosts } from './platform/db/hosts.ts';
import { type MasterKeySource, readMasterKey, saveMasterKey } from './platform/crypto/master-key.ts';
import { armFaultPoint } from './platform/fault-points.ts';
import { tuneHeapGrowing } from './platform/heap.ts';
import { packagePath } from './platform/paths.ts';
import { healthRepo } from './platform/observability/health.repo.ts';
import { entitiesRepo } from './admin/entities.repo.ts';
import { commandUsage, helpAsked, usage } from './cli/usage.ts';

/**
 * The process that started payd, read when payd starts: a supervisor may end it while payd
 * is still starting (after /readyz answers, before start() has finished), and a parent read
 * then would already be the one payd was re-parented to.
 */
const PARENT_AT_START = process.ppid;

const VERSION = (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;

const USAGE = usage(VERSION);

/** Binds HOST:PORT for a moment, so that a port in use stops the start before anything else. */
async function probePort(config: Config): Promise<void> {
  if (config.port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, config)));
    srv.listen({ port: config.port, host: config.host, exclusive: true }, () => srv.close(() => resolve()));
  });
}

function listenError(err: NodeJS.ErrnoException, config: Config): Error {
  switch (err.code) {
    case 'EADDRINUSE': return new ConfigError(`PORT ${config.port} is in use (HOST ${config.host}): stop what listens there or set another PORT`);
    case 'EACCES': return new ConfigError(`PORT ${config.port} cannot be bound without privileges (HOST ${config.host}): use a port above 1023`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN': return new ConfigError(`HOST ${config.host} is not an address of this machine`);
    default: return err;
  }
}

/** A database that cannot be reached or entered, in one line that names DATABASE_URL (never its password). */
function databaseError(err: unknown, config: Config): Error {
  const e = err as { code?: string; message?: string };
  if (!config.databaseUrl) return err as Error;
  const hosts = splitHosts(config.databaseUrl).map((one) => new URL(one));
  const u = hosts[0]!;
  const where = `${hosts.map((h) => `${h.hostname || h.searchParams.get('host')}${h.port ? `:${h.port}` : ''}`).join(',')}${u.pathname}`;
  const reason = e.code === '28P01' || e.code === '28000' ? 'authentication failed'
    : e.code === '3D000' ? 'the database does not exist'
      : e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' ? `host ${u.hostname} not found`
        : e.code === 'ECONNREFUSED' ? 'connection refused'
          : (e.message ?? String(err)).split('\n')[0];
  return new ConfigError(`DATABASE_URL: cannot open the database at ${where}: ${reason}`);
}

/**
 * Applies the migrations; a role that may not change the schema (a least-privilege
 * runtime role started without --no-migrate) is the operator's to fix: one line.
 */
async function migrating(db: Db, config: Config, log: pino.Logger): Promise<void> {
  try {
    const applied = await migrate(db);
    if (applied.length) log.info({ applied }, 'migrations applied');
  } catch (err) {
    let e: unknown = err;
    for (let depth = 0; e && depth < 3 && (e as { code?: string }).code !== '42501'; depth++) e = (e as { cause?: unknown }).cause;
    if (!e) throw err;
    const role = config.databaseUrl ? decodeURIComponent(new URL(splitHosts(config.databaseUrl)[0]!).username) : '';
    throw new ConfigError(`the database role${role ? ` ${role}` : ''} may not apply migrations (${(e as Error).message.split('\n')[0]}): ` +
      'apply them with `payd migrate` as the schema owner, then start this role with --no-migrate (docs/operations.md, A least-privilege runtime role)');
  }
}

async function openChecked(config: Config): Promise<Db> {
  const { openDb } = await import('./platform/db/index.ts');
  const db = await openDb(config, { template: !config.noMigrate });
  try {
    await healthRepo.ping(db);
  } catch (err) {
    await db.close().catch(() => {});
    throw databaseError(err, config);
  }
  return db;
}

/** Reads the master key; a key file that is not one is the operator's to fix. */
function masterKey(config: Config): MasterKeySource {
  try {
    return readMasterKey(config.masterKey, config.dataDir);
  } catch (err) {
    throw new ConfigError(`${(err as Error).message} (PAYD_MASTER_KEY is not set, so payd reads the key from its data directory)`);
  }
}

/** The checks that only read, then migrations (unless --no-migrate): the database ready to serve. */
async function prepare(config: Config, master: MasterKeySource, log: pino.Logger): Promise<Db> {
  const db = await openChecked(config);
  try {
    if (config.noMigrate) await checkSchema(db);
    const { KeyStore } = await import('./platform/crypto/keystore.ts');
    await new KeyStore(db, master.key).checkMasterKey();
    if (!config.noMigrate) await migrating(db, config, log);
    return db;
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

async function start(config: Config, log: pino.Logger): Promise<void> {
  await probePort(config);
  const master = masterKey(config);
  if (!config.databaseUrl) {
    log.warn(
      `running on the embedded database (PGlite) in ${config.dataDir}: for evaluation and development only. ` +
        'It does not fsync and serves one process. Production uses PostgreSQL: set DATABASE_URL.',
    );
  }
  armFaultPoint(config.faultKillAt, config.faultSignal);
  // Where a start's time goes, logged once it listens (times since the process started).
  const phases: Record<string, number> = { loaded: Math.round(performance.now()) };
  // The server's modules load while the database opens (PGlite compiles its WASM off the
  // main thread meanwhile): about a third of a second less per start here.
  const appModule = import('./app.ts');
  appModule.catch(() => {}); // awaited below; a start that fails before then exits anyway
  const db = await prepare(config, master, log);
  phases.database = Math.round(performance.now());
  saveMasterKey(master);
  if (master.origin !== 'env' && config.databaseUrl) {
    log.warn(`PAYD_MASTER_KEY is not set: using ${master.file}. Every payd process on this database needs the same key; set PAYD_MASTER_KEY in production.`);
  }
  const { buildApp } = await appModule;
  // Tracing, when PAYD_OTEL_EXPORTER names an exporter: the SDK loads only then.
  const tracing = config.tracing.exporter === 'none' ? undefined
    : (await import('./platform/observability/otel-sdk.ts')).tracingFromConfig(config, VERSION);
  // The server's lines go to stdout a turn of the event loop at a time (logger.ts, turnBatched).
  const logStream = config.logLevel === 'silent' ? undefined : (await import('./platform/observability/logger.ts')).turnBatched();
  const app = await buildApp({ config, db, masterKey: master.key, tracing, ...(logStream ? { logStream } : {}) });
  phases.app = Math.round(performance.now());
  // Signals are handled from here on, before listening: a SIGTERM that comes as soon as the
  // server answers (a supervisor, npm) finds its handler, never Node's default exit.
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
      // The spans still buffered are exported (bounded by the grace period's timer above).
      await tracing?.shutdown().catch((err: unknown) => log.warn({ err }, 'tracing: the last spans were not exported'));
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // Read before listening (a signal after ready finds its handler installed): a new PostgreSQL database has no merchant.
  const noMerchant = config.databaseUrl !== undefined && !config.demo && config.role !== 'worker' && (await entitiesRepo.count(db)) === 0;
  try {
    await app.listen({ port: config.port, host: config.host });
    phases.listening = Math.round(performance.now());
  } catch (err) {
    await app.close().catch(() => {});
    await db.close().catch(() => {});
    await tracing?.shutdown().catch(() => {});
    throw listenError(err as NodeJS.ErrnoException, config);
  }
  // Once listening, so that the start (the embedded database unpacked, the modules
  // compiled) collects as it did: a full GC at 1.5 times the live heap under load, not
  // up to 4 (platform/heap.ts).
  tuneHeapGrowing();
  if (config.role === 'all' || config.role === 'worker') {
    // While the database is away: one warning, then one line when it is back (outage-log.ts).
    const { DatabaseOutageLog } = await import('./platform/observability/outage-log.ts');
    const outage = new DatabaseOutageLog(log);
    app.services.recovery.start(config.recoveryIntervalMs, (err) => outage.failed('recovery', err, 'recovery pass failed'), () => outage.succeeded('recovery'));
    app.webhooks.dispatcher.start((err) => outage.failed('webhooks', err, 'webhook dispatch failed'), () => outage.succeeded('webhooks'));
  }
  const demo = config.demo ? await (await import('./admin/demo.ts')).bootstrapDemo(app.services.entities, { db, identity: app.services.identity }) : undefined;
  log.info({ startupMs: { ...phases, ready: Math.round(performance.now()) }, ...(tracing ? { tracing: config.tracing.exporter } : {}) }, 'started');

  console.log(`\npayd ${VERSION} (${config.role}) listening on ${config.baseUrl}`);
  console.log(`  API reference: ${config.baseUrl}/docs   OpenAPI: ${config.baseUrl}/openapi.json`);
  if (demo) {
    console.log('\nA demo merchant was created. Its API key is shown this once; keep it:');
    console.log(`  entity id: ${demo.entityId}`);
    console.log(`  API key:   ${demo.apiKey}`);
    console.log(`\nGet a token:\n  curl -s -X POST ${config.baseUrl}/oauth/token -H 'x-api-key: ${demo.apiKey}' -d grant_type=client_credentials\n`);
    if (demo.dashboard) {
      console.log(`Dashboard: ${config.baseUrl}/dashboard  (shown this once)`);
      console.log(`  email:    ${demo.dashboard.email}\n  password: ${demo.dashboard.password}\n`);
    }
  }
  if (!config.databaseUrl) {
    console.log('Embedded database: for evaluation and development only. Production uses PostgreSQL (DATABASE_URL).\n');
  } else if (noMerchant) {
    // A new PostgreSQL database has no merchant (no demo there): say how to make the first,
    // with the operator API, which is off until PAYD_ADMIN_TOKEN is set.
    // Pasteable into bash as printed: the entity's id is kept in ENTITY, as the README's Operator API block does.
    const create = `  ENTITY=$(curl -s -X POST ${config.baseUrl}/admin/v1/entities -H "authorization: Bearer $PAYD_ADMIN_TOKEN" -H 'content-type: application/json' -d '{"name": "My shop"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).id')\n  curl -s -X POST ${config.baseUrl}/admin/v1/entities/$ENTITY/api-keys -H "authorization: Bearer $PAYD_ADMIN_TOKEN"\n(README.md, "On PostgreSQL" and "Operator API")\n`;
    console.log(config.adminToken === undefined
      ? `No merchant yet, and the operator API that creates merchants is off: PAYD_ADMIN_TOKEN is not set. Restart payd with PAYD_ADMIN_TOKEN set (16 characters or more, e.g. export PAYD_ADMIN_TOKEN=$(openssl rand -hex 24)), then create the first merchant and its API key:\n${create}`
      : `No merchant yet. Create the first one and its API key with the operator token (PAYD_ADMIN_TOKEN):\n${create}`);
  }

  if (config.stopWithParent) {
    // Started by npm or npx: when a supervisor's SIGTERM ends npm (or the shell between
    // npm and payd) without reaching payd, payd is re-parented; it stops as on SIGTERM
    // instead of living on as an orphan that holds the port.
    const parentGone = () => process.ppid !== PARENT_AT_START;
    if (parentGone()) void stop('parent exited');
    else setInterval(() => { if (parentGone()) void stop('parent exited'); }, 250).unref();
  }
}

async function main(argv: string[]): Promise<void> {
  // `payd <command> --help` (or -h, or `payd help <command>`): that command's usage, before anything starts.
  const help = helpAsked(argv);
  if (help) {
    if (help.command === undefined) return console.log(USAGE);
    const text = commandUsage(help.command);
    if (!text) throw new ConfigError(`unknown command "${help.command}"\n\n${USAGE}`);
    return console.log(text);
  }
  if (argv[0] === 'listen' || argv[0] === 'trigger' || argv[0] === 'payments' || argv[0] === 'events' || argv[0] === 'webhook-endpoints' || argv[0] === 'login') {
    // Clients of a running payd: no server configuration, no database.
    const dev = await import('./cli/dev.ts');
    const profiles = await import('./cli/profile.ts');
    const out = (line: string) => console.log(line);
    try {
      if (argv[0] === 'login') {
        return await profiles.login(argv.slice(1), process.env, out, async (apiKey, base) => {
          await new dev.Api({ apiKey, base }).call('GET', '/v2/events?limit=1');
        });
      }
      if (argv[0] === 'trigger') return await dev.trigger(argv.slice(1), process.env, out);
      if (argv[0] === 'payments') return await (await import('./cli/resources.ts')).payments(argv.slice(1), process.env, out);
      if (argv[0] === 'events') return await (await import('./cli/resources.ts')).events(argv.slice(1), process.env, out);
      if (argv[0] === 'webhook-endpoints') return await (await import('./cli/resources.ts')).webhookEndpoints(argv.slice(1), process.env, out);
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      return await dev.listen(argv.slice(1), process.env, out, stop.signal);
    } catch (err) {
      if (err instanceof dev.CliError || err instanceof profiles.ProfileError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw new ConfigError((err as Error).message);
      throw err;
    }
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        role: { type: 'string' },
        'no-migrate': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (err) {
    throw new ConfigError(`${(err as Error).message.split('\n')[0]} (payd help lists the options)`);
  }
  const { positionals, values } = parsed;
  const [command = 'help', ...rest] = positionals;
  if (values.version || command === 'version') {
    console.log(VERSION);
    return;
  }
  if (values.help || command === 'help') {
    console.log(USAGE);
    return;
  }
  if (values.role !== undefined && !['all', 'api', 'identity', 'worker'].includes(values.role)) {
    throw new ConfigError(`--role must be all, api, identity or worker, got "${values.role}"`);
  }
  const config = loadConfig(process.env, {
    ...(values.role ? { role: values.role as Role } : {}),
    ...(values['no-migrate'] ? { noMigrate: true } : {}),
  });
  const [{ default: pino }, { loggerOptions }] = await Promise.all([import('pino'), import('./platform/observability/logger.ts')]);
  const log = pino(loggerOptions(config.logLevel));

  switch (command) {
    case 'start':
      return start(config, log);
    case 'migrate': {
      const db = await openChecked(config);
      try {
        await migrating(db, config, log);
      } finally {
        await db.close();
      }
      console.log('migrations are up to date');
      return;
    }
    case 'keys': {
      const [action, purposeName] = rest;
      const { ACCESS_TOKEN_KEYS } = await import('./identity/oauth/access-tokens.ts');
      const { REDIRECTION_KEYS } = await import('./checkout/redirection-token.ts');
      const { IDP_ID_TOKEN_KEYS } = await import('./identity/oauth/id-token.ts');
      const { IDP_ACCESS_TOKEN_KEYS } = await import('./identity/oauth/user-tokens.ts');
      // The names the docs use, and the key store's own names.
      const purposes: Record<string, typeof REDIRECTION_KEYS> = {
        'access-token': ACCESS_TOKEN_KEYS, [ACCESS_TOKEN_KEYS.name]: ACCESS_TOKEN_KEYS,
        redirection: REDIRECTION_KEYS,
        identity: IDP_ID_TOKEN_KEYS, [IDP_ID_TOKEN_KEYS.name]: IDP_ID_TOKEN_KEYS,
        'identity-access-token': IDP_ACCESS_TOKEN_KEYS, [IDP_ACCESS_TOKEN_KEYS.name]: IDP_ACCESS_TOKEN_KEYS,
      };
      if (action !== 'rotate') throw new ConfigError(`payd keys rotate <access-token|redirection|identity|identity-access-token> (got "${rest.join(' ')}")`);
      const purpose = purposeName ? purposes[purposeName] : undefined;
      if (!purpose) throw new ConfigError(`payd keys rotate: unknown key "${purposeName ?? ''}"; one of access-token, redirection, identity (the identity provider's RS256 id_token key), identity-access-token`);
      const master = masterKey(config);
      const db = await prepare(config, master, log);
      saveMasterKey(master);
      const { KeyStore } = await import('./platform/crypto/keystore.ts');
      const kid = await new KeyStore(db, master.key).rotate(purpose).finally(() => db.close());
      console.log(`rotated ${purpose.name}: new kid ${kid}`);
      return;
    }
    default:
      throw new ConfigError(`unknown command "${command}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof SchemaError || (err instanceof Error && (err.name === 'MasterKeyMismatchError' || err.name === 'EmbeddedDbBusyError'))) {
    console.error(`payd: ${err.message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
