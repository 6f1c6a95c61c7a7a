// Applications (OAuth clients) of the identity provider: registration, reading, edits of
// the Allowed Callback URLs and Allowed Origins, and secret rotation. A client secret has
// 256 bits and is shown once. It is stored twice: as its SHA-256 (client authentication)
// and encrypted by the master key with the client id as associated data, because the
// spec's id_token is signed HS256 with the secret, so payd must be able to recover it.
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../../platform/db/index.ts';
import { encrypt, sha256 } from '../../platform/crypto/secrets.ts';
import { problems } from '../../platform/http/problem.ts';
import { type AppRow, idpRepo } from '../idp/idp.repo.ts';
import { clientSecretAad } from '../oauth/id-token.ts';
import { type Caller, type ClientAction, assertReachesClient } from '../idp/authority.ts';

export interface NewApplication {
  name: string;
  callback_urls: string[];
  allowed_origins?: string[];
  first_party?: boolean;
  token_endpoint_auth_method?: AppRow['token_endpoint_auth_method'];
  response_types?: string[];
  management_scopes?: string[];
  id_token_signed_response_alg?: 'HS256' | 'RS256';
  /** The Management API application registering it (it then reaches it); none for the operator and the console. */
  created_by?: string;
}

/** Applications payd creates itself: only payd changes them. */
export const BUILT_IN_CLIENT_IDS: ReadonlySet<string> = new Set(['payd-console', 'payd-dashboard']);

/** Who changes an application: a Management API client, the operator API, or a console user. */
export interface Actor {
  via: 'management' | 'operator' | 'console';
  /** Recorded with the change: the client id, "operator", or the console user's email. */
  name: string;
  /** A Management API caller: what it reaches is decided by authority.ts. */
  caller?: Caller;
}

function refuseBuiltIn(clientId: string): void {
  if (BUILT_IN_CLIENT_IDS.has(clientId)) {
    throw problems.forbidden('This application is built into payd and cannot be changed or deleted through the Management API.');
  }
}

/**
 * Whether a Management API caller reaches the application for this action (403 when not);
 * the operator and console administrators reach every application. Undefined when there
 * is no such application.
 */
async function reach(q: Queryable, clientId: string, actor: Actor, action: ClientAction, patch?: ApplicationPatch): Promise<AppRow | undefined> {
  if (actor.via === 'management') refuseBuiltIn(clientId);
  const app = await idpRepo.app(q, clientId);
  if (app && actor.via === 'management') {
    if (!actor.caller) throw new Error('a Management API change without its caller');
    assertReachesClient(actor.caller, app, action, patch);
  }
  return app;
}

export interface ApplicationPatch {
  name?: string;
  callback_urls?: string[];
  allowed_origins?: string[];
  first_party?: boolean;
  /** Granted by the operator or a console administrator only, never through the Management API. */
  management_scopes?: string[];
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Checks callback URLs and origins; throws the invalid field's problem. */
function checkUrls(callbacks: string[] | undefined, origins: string[] | undefined): void {
  for (const [i, u] of (callbacks ?? []).entries()) {
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw problems.invalidField(`callback_urls[${i}]`, 'is not an absolute URL');
    }
    if (url.hash || u.includes('#')) throw problems.invalidField(`callback_urls[${i}]`, 'must not have a fragment (RFC 6749 3.1.2)');
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname))) {
      throw problems.invalidField(`callback_urls[${i}]`, 'must use https (http only on localhost, for development)');
    }
  }
  for (const [i, o] of (origins ?? []).entries()) {
    let ok = false;
    try {
      ok = new URL(o).origin === o;
    } catch { /* not a URL */ }
    if (!ok) throw problems.invalidField(`allowed_origins[${i}]`, 'must be an origin such as https://app.example.com (no path)');
  }
}

export class Applications {
  constructor(private readonly db: Db, private readonly masterKey: Buffer) {}

  private newSecret(clientId: string) {
    const secret = randomBytes(32).toString('base64url'); // 256 bits
    return { secret, hash: sha256(secret).toString('hex'), enc: encrypt(this.masterKey, secret, clientSecretAad(clientId)) };
  }

  async create(input: NewApplication) {
    checkUrls(input.callback_urls, input.allowed_origins);
    const method = input.token_endpoint_auth_method ?? 'client_secret_basic';
    if (method === 'none' && input.management_scopes?.length) {
      throw problems.invalidField('management_scopes', 'a public client (token_endpoint_auth_method none) cannot get Management API tokens');
    }
    const clientId = randomBytes(16).toString('base64url');
    const secret = method === 'none' ? undefined : this.newSecret(clientId);
    const row = await idpRepo.insertApp(this.db, {
      client_id: clientId, name: input.name, secret_hash: secret?.hash ?? null, secret_enc: secret?.enc ?? null, first_party: input.first_party ?? true,
      callback_urls: input.callback_urls, allowed_origins: input.allowed_origins ?? [], token_endpoint_auth_method: method,
      response_types: input.response_types ?? ['code'], management_scopes: input.management_scopes ?? [],
      id_token_alg: method === 'none' ? 'RS256' : (input.id_token_signed_response_alg ?? 'HS256'), created_by: input.created_by ?? null,
    });
    return { ...appView(row), ...(secret ? { client_secret: secret.secret } : {}) };
  }

  async get(clientId: string) {
    const row = await idpRepo.app(this.db, clientId);
    if (!row) throw problems.notFound('No such application.');
    return appView(row);
  }

  async list(limit: number) {
    return (await idpRepo.apps(this.db)).slice(0, limit).map(appView);
  }

  /**
   * Changes an application; `actor` says who (recorded with the change). A built-in
   * application (the console) is not changed through the Management API: rewriting its
   * callback URLs would hand an administrator's sign-in to whoever holds update:clients.
   */
  async update(clientId: string, patch: ApplicationPatch, actor: Actor) {
    checkUrls(patch.callback_urls, patch.allowed_origins);
    if (patch.management_scopes !== undefined && actor.via === 'management') throw problems.forbidden('Management API scopes are granted by the operator or a console administrator only.');
    if (patch.management_scopes?.length && BUILT_IN_CLIENT_IDS.has(clientId)) throw problems.invalidField('management_scopes', 'a built-in application gets no Management API scopes');
    const row = await this.db.transaction(async (tx) => {
      const before = await reach(tx, clientId, actor, 'update', patch);
      if (!before) return undefined;
      if (patch.management_scopes?.length && before.token_endpoint_auth_method === 'none') {
        throw problems.invalidField('management_scopes', 'a public client (token_endpoint_auth_method none) cannot get Management API tokens');
      }
      const after = await idpRepo.updateApp(tx, clientId, patch);
      const changes: Record<string, { from: unknown; to: unknown }> = {};
      for (const field of ['name', 'callback_urls', 'allowed_origins', 'first_party', 'management_scopes'] as const) {
        if (after && JSON.stringify(before[field]) !== JSON.stringify(after[field])) changes[field] = { from: before[field], to: after[field] };
      }
      if (Object.keys(changes).length > 0) await idpRepo.audit(tx, { client_id: clientId, actor: actor.name, action: 'update', changes });
      return after;
    });
    if (!row) throw problems.notFound('No such application.');
    return appView(row);
  }

  /** The recorded changes of an application, newest first. */
  async audit(clientId: string, limit = 50) {
    // A deleted application's audit stays readable (its deletion is the last entry).
    if (!(await idpRepo.appEverExisted(this.db, clientId))) throw problems.notFound('No such application.');
    return (await idpRepo.auditOf(this.db, clientId, limit)).map((a) => ({ id: a.id, at: a.at, actor: a.actor, action: a.action, changes: a.changes }));
  }

  /**
   * Deletes an application: it is unknown from then on (sign-in, client authentication,
   * Management API tokens), its unused codes are burnt, its access and refresh tokens
   * revoked and the users' consents to it removed, in one transaction, recorded in its
   * audit. Built-in applications cannot be deleted (403).
   */
  async delete(clientId: string, actor: Actor): Promise<void> {
    refuseBuiltIn(clientId);
    const row = await this.db.transaction(async (tx) => {
      if (!(await reach(tx, clientId, actor, 'delete'))) return undefined;
      const deleted = await idpRepo.deleteApp(tx, clientId);
      if (deleted) await idpRepo.audit(tx, { client_id: clientId, actor: actor.name, action: 'delete', changes: { name: { from: deleted.name, to: null } } });
      return deleted;
    });
    if (!row) throw problems.notFound('No such application.');
  }

  /** The application's Management API tokens issued until now are refused from now on. */
  async revokeTokens(clientId: string, actor: Actor) {
    const at = await this.db.transaction(async (tx) => {
      if (!(await reach(tx, clientId, actor, 'revoke_tokens'))) return undefined;
      const when = await idpRepo.revokeTokens(tx, clientId);
      if (when) await idpRepo.audit(tx, { client_id: clientId, actor: actor.name, action: 'revoke_tokens', changes: {} });
      return when;
    });
    if (!at) throw problems.notFound('No such application.');
    return { client_id: clientId, tokens_not_before: at };
  }

  /**
   * A new secret, shown once; the old one stops authenticating at once. Tokens already
   * issued stay valid (they are signed with the key store's keys, not the secret).
   */
  async rotateSecret(clientId: string, actor: Actor) {
    const app = await reach(this.db, clientId, actor, 'rotate_secret');
    if (!app) throw problems.notFound('No such application.');
    if (app.token_endpoint_auth_method === 'none') {
      throw problems.refused('public-client', 'Public client', 'A public client (token_endpoint_auth_method none) has no secret to rotate.');
    }
    const secret = this.newSecret(clientId);
    const row = await this.db.transaction(async (tx) => {
      const replaced = await idpRepo.replaceSecret(tx, clientId, secret.hash, secret.enc);
      if (replaced) await idpRepo.audit(tx, { client_id: clientId, actor: actor.name, action: 'rotate_secret', changes: {} });
      return replaced;
    });
    if (!row) throw problems.notFound('No such application.');
    return { ...appView(row), client_secret: secret.secret };
  }
}

/** The grants an application may use: the code flow and refresh always, the password grant when opted in. */
export const grantTypesOf = (passwordGrant: boolean) => ['authorization_code', 'refresh_token', ...(passwordGrant ? ['password'] : [])];

export function appView(a: AppRow) {
  return {
    client_id: a.client_id, name: a.name, first_party: a.first_party, callback_urls: a.callback_urls, allowed_origins: a.allowed_origins,
    token_endpoint_auth_method: a.token_endpoint_auth_method, id_token_signed_response_alg: a.secret_hash ? a.id_token_alg : 'RS256', response_types: a.response_types,
    management_scopes: a.management_scopes, created_by: a.created_by, created_at: a.created_at,
    grant_types: grantTypesOf(a.password_grant),
  };
}
