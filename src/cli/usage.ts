// The payd command's help: `payd help` (or `payd --help`) lists every command;
// `payd <command> --help`, `payd <command> -h` and `payd help <command>` print that command's
// usage and exit 0, whatever else is on the line, without starting the command.
import { TRIGGERS } from './dev.ts';

/** One command: its synopsis (a line or two), one sentence, and its options. */
interface Command { synopsis: string; summary: string; details?: string }

const CONNECTION = `Connection (every client command):
  --api-key <key>     the merchant's API key (default: --profile's key, else PAYD_API_KEY,
                      else the profile PAYD_PROFILE names or "default": payd login)
  --profile <name>    the key (and URL) saved by payd login --profile <name>
  --base-url <url>    the running payd (default: the profile's when its key is used, else
                      PAYD_URL, else http://localhost:$PORT, PORT 3000)`;

const COMMANDS: Record<string, Command> = {
  start: {
    synopsis: 'payd start [--role all|api|identity|worker] [--no-migrate]',
    summary: 'start the server; migrations apply first, or with --no-migrate (PAYD_NO_MIGRATE=true) the schema must be current',
    details: `Options:
  --role <role>   all (default): every route and the background workers; api: the payment
                  API, the checkout, the token endpoint and the operator API; identity: the
                  identity provider; worker: the recovery worker and the webhook dispatcher
                  (docs/operations.md, Processes and roles)
  --no-migrate    do not apply migrations; refuse to start unless the schema is current

Configuration comes from the environment (PORT, HOST, DATABASE_URL, PAYD_DATA_DIR,
PAYD_MASTER_KEY, PAYD_ADMIN_TOKEN, ...): see README.md and docs/operations.md.`,
  },
  migrate: {
    synopsis: 'payd migrate',
    summary: 'apply database migrations and exit',
    details: 'The database is DATABASE_URL, or the embedded one in PAYD_DATA_DIR when it is not set.',
  },
  keys: {
    synopsis: 'payd keys rotate <access-token|redirection|identity|identity-access-token>',
    summary: 'rotate a signing key (the old one still verifies until the tokens it signed have expired)',
    details: `Keys:
  access-token            the Payment API's access tokens
  redirection             the service-redirection-data token of the checkout
  identity                the identity provider's RS256 id_token key
  identity-access-token   the identity provider's access tokens`,
  },
  login: {
    synopsis: 'payd login --api-key <key> [--base-url <url>] [--profile <name>]',
    summary: 'check an API key against the running payd and keep it for the client commands',
    details: `Options:
  --api-key <key>     the merchant's API key (default: PAYD_API_KEY)
  --base-url <url>    the running payd, kept with the key (default: PAYD_URL, else not kept:
                      http://localhost:$PORT at each command)
  --profile <name>    the profile's name (default: default); pick it with --profile or
                      PAYD_PROFILE

The key is kept in $XDG_CONFIG_HOME/payd/config.json (default ~/.config/payd/config.json),
readable by you only (mode 0600), and never printed back in full. Client commands use it
when neither --api-key nor PAYD_API_KEY is given.`,
  },
  listen: {
    synopsis: 'payd listen --forward-to <url> [--secret whsec_...] [--events a,b]',
    summary: "forward your entity's new events to a local receiver, signed as the webhook is",
    details: `Options:
  --forward-to <url>   your webhook receiver, e.g. http://localhost:4243/webhooks (required)
  --secret <whsec_..>  the secret to sign with (default: PAYD_WEBHOOK_SECRET, else one is
                       made up and printed)
  --events <a,b>       forward only these event types (default: all)
  --poll-ms <ms>       how often to ask GET /v2/events (default 1000, at least 100)

${CONNECTION}`,
  },
  trigger: {
    synopsis: 'payd trigger <event> [--amount N] [--currency C] [--webhook-endpoint <id>]',
    summary: 'make the API calls after which payd sends <event>',
    details: `Events (the calls each makes: docs/test-cards.md has the cards):
${Object.entries(TRIGGERS).map(([type, t]) => `  ${type.padEnd(29)}${t.what}`).join('\n')}

Overrides:
  --amount <n>              the payment's (or link's) amount in minor units (default 2000:
                            20.00 EUR; 1000 is ¥1,000); a capture takes all of it
  --currency <code>         its currency (default EUR; card-sim takes EUR, USD, GBP, CHF,
                            JPY; the events with a gift card take EUR only)
  --webhook-endpoint <id>   webhook_endpoint.test: the endpoint (default: your first one)

${CONNECTION}`,
  },
  payments: {
    synopsis: 'payd payments list|get <id>|capture <id> --amount N|refund <id> [--amount N]|void <id>',
    summary: "a running payd's payments",
    details: `Options:
  --limit <n>                list: 1 to 100 (default 20)
  --status <status>          list: only this authorization status
  --reference <ref>          list: only this order reference
  --amount <n>               capture (required), refund: in minor units (1050 is 10.50 EUR)
  --idempotency-key <key>    capture, refund, void: retry a lost answer with the printed key
  --json                     list: the API's page as it is

${CONNECTION}`,
  },
  events: {
    synopsis: 'payd events list [--type a,b]|get <id>|resend <id> [--webhook-endpoint <id>]',
    summary: 'its events, as their webhook bodies; resend sends one again to your endpoints',
    details: `Options:
  --type <a,b>                list: only these event types
  --limit <n>                 list: 1 to 100 (default 20)
  --webhook-endpoint <id>     resend: to this endpoint only (default: every enabled endpoint
                              that takes the event's type, or the event's own URL)
  --idempotency-key <key>     resend: retry a lost answer with the printed key
  --json                      list, resend: the API's answer as it is

${CONNECTION}`,
  },
  'webhook-endpoints': {
    synopsis: `payd webhook-endpoints list|create --url U [--events a,b]|get <id>|update <id> [--url U] [--events a,b] [--enable|--disable]
                        |delete <id>|rotate <id>|test <id>`,
    summary: 'its webhook endpoints (the secret is printed once, by create and rotate)',
    details: `Options:
  --url <url>                      create (required), update: where events are sent
  --events <a,b>                   create, update: the event types sent (default every type)
  --description <text>             create, update
  --enable, --disable              update (--disable also on create)
  --previous-valid-seconds <n>     rotate: how long the previous secret still signs (0 to 604800)
  --idempotency-key <key>          create, rotate, test: the key sent (create and test print theirs: retry a lost answer with it)
  --limit <n>                      list: 1 to 100 (default 20)
  --json                           the API's answer as it is

${CONNECTION}`,
  },
  help: { synopsis: 'payd help [<command>] | payd <command> --help', summary: 'this list, or one command\'s usage' },
  version: { synopsis: 'payd --version', summary: "payd's version" },
};

/** Every command, one synopsis and one sentence each (`payd help`). */
export function usage(version: string): string {
  const lines = Object.values(COMMANDS).map((c) => `  ${c.synopsis}\n      ${c.summary}`);
  return `payd ${version}

Usage:
${lines.join('\n')}

Configuration comes from the environment; see README.md. payd <command> --help tells more.`;
}

/** One command's usage, or undefined for a command payd does not have. */
export function commandUsage(name: string): string | undefined {
  const c = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!c) return undefined;
  return `Usage: ${c.synopsis}\n\n${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.${c.details ? `\n\n${c.details}` : ''}`;
}

/**
 * Whether the command line asks for help, and about what: `{ command }` for
 * `payd <command> ... --help|-h` and `payd help <command>`, `{}` for `payd`, `payd help` and
 * `payd --help`; undefined when it asks for none. Arguments after `--` are not options.
 */
export function helpAsked(argv: readonly string[]): { command?: string } | undefined {
  const end = argv.indexOf('--');
  const args = end === -1 ? argv : argv.slice(0, end);
  // The command: the first argument that is neither an option nor the value of --role.
  const command = args.find((a, i) => !a.startsWith('-') && args[i - 1] !== '--role');
  if (command === undefined && args.length === 0) return {};
  if (command === 'help') {
    const about = args.slice(args.indexOf('help') + 1).find((a) => !a.startsWith('-'));
    return about === undefined ? {} : { command: about };
  }
  if (!args.includes('--help') && !args.includes('-h')) return undefined;
  return command === undefined ? {} : { command };
}
