// A local stand-in for the Stripe endpoints that stripe-stateful-mock lacks (POST
// /v1/tokens), in front of the mock: each such request is checked against Stripe's
// published request schema as the official `stripe` package ships it (its TypeScript
// definitions are generated from Stripe's OpenAPI specification, whose version the
// package's OPENAPI_VERSION file names), and refused the way Stripe refuses it ("Received
// unknown parameter", "Missing required param"); every other request is forwarded to the
// mock. Every request is recorded (method, path, the secret key it was made with, the
// Stripe-Account and Idempotency-Key headers, and for the checked ones the verdict), so
// tests can see which account a call went to. The card number never leaves this process.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface RecordedRequest {
  method: string;
  path: string;
  /** The secret key of the Authorization header. */
  key: string | undefined;
  stripeAccount: string | undefined;
  idempotencyKey: string | undefined;
  /** Checked requests: 'ok' or the error Stripe would answer. */
  verdict?: string;
}

export interface StripeSchemaProxy {
  url: string;
  requests: RecordedRequest[];
  stop(): Promise<void>;
}

interface Member { optional: boolean; type: string }
type Shape = Map<string, Member>;

/** The members of `interface name` (or `namespace ns { interface name }`) in a stripe .d.ts file. */
function shapeOf(file: string, name: string, ns?: string): Shape {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  let found: ts.InterfaceDeclaration | undefined;
  const visit = (node: ts.Node, inNs: string | undefined) => {
    if (ts.isModuleDeclaration(node)) {
      if (node.body) ts.forEachChild(node.body, (c) => visit(c, node.name.getText(source)));
      return;
    }
    if (ts.isInterfaceDeclaration(node) && node.name.text === name && inNs === ns) found = node;
  };
  ts.forEachChild(source, (c) => visit(c, undefined));
  if (!found) throw new Error(`${ns ? `${ns}.` : ''}${name} is not in ${file}`);
  const shape: Shape = new Map();
  for (const m of found.members) {
    if (!ts.isPropertySignature(m) || !m.name) continue;
    shape.set(m.name.getText(source), { optional: !!m.questionToken, type: m.type?.getText(source) ?? 'unknown' });
  }
  return shape;
}

/** The request schema of POST /v1/tokens: its parameters, and a card's fields. */
export function tokenCreateSchema(): { params: Shape; card: Shape; openapiVersion: string } {
  const pkg = path.resolve('node_modules/stripe'); // tests run from the repository's root
  const file = path.join(pkg, 'esm/resources/Tokens.d.ts');
  return {
    params: shapeOf(file, 'TokenCreateParams'),
    card: shapeOf(file, 'Card', 'TokenCreateParams'),
    openapiVersion: readFileSync(path.join(pkg, 'OPENAPI_VERSION'), 'utf8').trim(),
  };
}

/** Stripe's answer to a form body that does not fit the schema, or undefined when it fits. */
export function checkTokenCreate(form: URLSearchParams, schema = tokenCreateSchema()): string | undefined {
  const card = new Map<string, string>();
  for (const [k, v] of form) {
    const m = /^([a-z_]+)(?:\[([a-z_0-9]+)\])?$/.exec(k);
    if (!m) return `Received unknown parameter: ${k}`;
    const [, top, sub] = m;
    if (!schema.params.has(top!)) return `Received unknown parameter: ${top}`;
    if (top === 'card') {
      if (sub === undefined) continue; // a card token id (string)
      const field = schema.card.get(sub);
      if (!field) return `Received unknown parameter: card[${sub}]`;
      if (field.type !== 'string') return `Invalid ${field.type}: card[${sub}]`;
      card.set(sub, v);
    }
  }
  if (!form.has('card') && card.size === 0) return 'Missing required param: card.';
  if (card.size > 0) {
    for (const [name, f] of schema.card) {
      if (!f.optional && !card.has(name)) return `Missing required param: card[${name}].`;
    }
  }
  return undefined;
}

const body = (req: IncomingMessage) => new Promise<Buffer>((resolve, reject) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
});

/** A token the mock accepts as a charge's source, for the card's network. */
const tokenFor = (number: string) => (number.startsWith('5') ? 'tok_mastercard' : number.startsWith('3') ? 'tok_amex' : 'tok_visa');

export async function startStripeSchemaProxy(mockUrl: string): Promise<StripeSchemaProxy> {
  const schema = tokenCreateSchema();
  const requests: RecordedRequest[] = [];
  const tokens = new Map<string, string>(); // Idempotency-Key -> the first answer
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await body(req);
      const url = req.url ?? '/';
      const auth = req.headers.authorization;
      const rec: RecordedRequest = {
        method: req.method ?? 'GET', path: url.split('?')[0]!, key: auth?.startsWith('Bearer ') ? auth.slice(7) : undefined,
        stripeAccount: req.headers['stripe-account'] as string | undefined, idempotencyKey: req.headers['idempotency-key'] as string | undefined,
      };
      requests.push(rec);
      const send = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${requests.length}` });
        res.end(JSON.stringify(json));
      };
      if (rec.method === 'POST' && rec.path === '/v1/tokens') {
        if (!rec.key?.startsWith('sk_')) return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
        if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
          rec.verdict = 'not a form body';
          return send(400, { error: { type: 'invalid_request_error', message: rec.verdict } });
        }
        const form = new URLSearchParams(raw.toString('utf8'));
        const error = checkTokenCreate(form, schema);
        rec.verdict = error ?? 'ok';
        if (error) return send(400, { error: { type: 'invalid_request_error', message: error, param: /: (\S+?)\.?$/.exec(error)?.[1] } });
        const previous = rec.idempotencyKey ? tokens.get(rec.idempotencyKey) : undefined;
        if (previous) {
          res.writeHead(200, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
          return res.end(previous);
        }
        const number = form.get('card[number]') ?? '';
        const answer = JSON.stringify({
          id: tokenFor(number), object: 'token', type: 'card', used: false, livemode: false, created: Math.floor(Date.now() / 1000),
          card: {
            id: `card_${requests.length}`, object: 'card', brand: tokenFor(number) === 'tok_visa' ? 'Visa' : 'MasterCard', last4: number.slice(-4),
            exp_month: Number(form.get('card[exp_month]')), exp_year: Number(form.get('card[exp_year]')), funding: 'credit', country: 'US',
          },
        });
        if (rec.idempotencyKey) tokens.set(rec.idempotencyKey, answer);
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(answer);
      }
      const headers: Record<string, string> = {};
      for (const h of ['authorization', 'content-type', 'stripe-account', 'idempotency-key', 'stripe-version']) {
        const v = req.headers[h];
        if (typeof v === 'string') headers[h] = v;
      }
      const forwarded = await fetch(`${mockUrl}${url}`, { method: rec.method, headers, ...(raw.length ? { body: new Uint8Array(raw) } : {}) });
      res.writeHead(forwarded.status, { 'content-type': forwarded.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await forwarded.arrayBuffer()));
    })().catch((err: Error) => {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'api_error', message: err.message } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** For test output: which published schema the checks used. */
export function schemaVersionNote(): string {
  return `Stripe OpenAPI ${tokenCreateSchema().openapiVersion} (as shipped in the stripe package)`;
}
