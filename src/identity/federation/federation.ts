// Social login: federation to upstream OpenID Connect providers (docs/identity.md, "Social
// login"). The provider's sign-in page offers a button per configured upstream; it starts
// an authorization code request there with PKCE, state and nonce, the state bound to the
// browser (a cookie) and kept server-side with the pending authorization request. The
// callback exchanges the code at the upstream's token endpoint, verifies the id_token
// (signature by the upstream's JWKS, or HS256 with the client secret; issuer, audience,
// expiry, nonce), reads the upstream's userinfo when it has one (same sub; its email and
// names win over the id_token's), then links:
//   - an upstream identity (issuer's provider, sub) already linked: that user;
//   - else a local user with the same email, only when the upstream says email_verified:
//     linked (an unverified upstream email never takes over an existing account);
//   - else a new user (email verified as the upstream says), linked.
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type { Db } from '../../platform/db/index.ts';
import { decrypt, encrypt, sha256 } from '../../platform/crypto/secrets.ts';
import type { AuthRequest, IdentityService } from '../idp/idp.service.ts';
import { type UserRow, idpRepo } from '../idp/idp.repo.ts';
import { type ProviderRow, type ProviderSummary, federationRepo } from './federation.repo.ts';

export const STATE_TTL_SECONDS = 600;
const DISCOVERY_TTL_MS = 10 * 60_000;

export type { ProviderRow };
interface Discovery { issuer: string; authorization_endpoint: string; token_endpoint: string; jwks_uri?: string; userinfo_endpoint?: string }

/** A federated sign-in that cannot complete: shown to the user on an error page, nothing signed in. */
export class FederationError extends Error {}

const hex = (s: string) => sha256(s).toString('hex');

export class Federation {
  private readonly discovered = new Map<string, { at: number; doc: Discovery }>();
  private readonly jwks = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

  constructor(private readonly db: Db, private readonly masterKey: Buffer, private readonly callbackUrl: string, private readonly identity: IdentityService) {}

  async providers(): Promise<ProviderSummary[]> {
    return federationRepo.providers(this.db);
  }

  async create(p: { id: string; name: string; issuer: string; client_id: string; client_secret: string; scopes?: string | undefined }): Promise<boolean> {
    return federationRepo.insertProvider(this.db, {
      id: p.id, name: p.name, issuer: p.issuer.replace(/\/$/, ''), client_id: p.client_id,
      client_secret_enc: encrypt(this.masterKey, p.client_secret, `upstream:${p.id}`), scopes: p.scopes ?? 'openid email profile',
    });
  }

  private async provider(id: string): Promise<ProviderRow> {
    const row = await federationRepo.provider(this.db, id);
    if (!row) throw new FederationError('This sign-in provider is not configured.');
    return row;
  }

  /** The upstream's metadata (cached 10 minutes); its issuer must be the configured one. */
  private async discovery(p: ProviderRow): Promise<Discovery> {
    const hit = this.discovered.get(p.id);
    if (hit && Date.now() - hit.at < DISCOVERY_TTL_MS) return hit.doc;
    let doc: Discovery;
    try {
      const res = await fetch(`${p.issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      doc = await res.json() as Discovery;
    } catch (err) {
      throw new FederationError(`${p.name} cannot be reached right now (${(err as Error).message}). Try again, or sign in with your password.`);
    }
    if (doc.issuer?.replace(/\/$/, '') !== p.issuer || !doc.authorization_endpoint || !doc.token_endpoint) {
      throw new FederationError(`${p.name} is not configured correctly (its metadata names another issuer).`);
    }
    this.discovered.set(p.id, { at: Date.now(), doc });
    return doc;
  }

  /** Where to send the browser, and the state to bind to it (a cookie). */
  async start(providerId: string, request: AuthRequest): Promise<{ location: string; state: string }> {
    const p = await this.provider(providerId);
    const d = await this.discovery(p);
    const state = randomBytes(32).toString('base64url');
    const nonce = randomBytes(16).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    await federationRepo.insertState(this.db, { stateHash: hex(state), providerId: p.id, nonce, codeVerifier: verifier, request, ttlSeconds: STATE_TTL_SECONDS });
    await federationRepo.retireExpiredStates(this.db);
    const url = new URL(d.authorization_endpoint);
    url.search = new URLSearchParams({
      response_type: 'code', client_id: p.client_id, redirect_uri: this.callbackUrl, scope: p.scopes, state, nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString();
    return { location: url.toString(), state };
  }

  /**
   * The callback: the state (used once, and the browser's own), the code exchanged, the
   * id_token verified, the user found, linked or created. Returns the user and the
   * authorization request to resume.
   */
  async callback(q: Record<string, unknown>, browserState: string | undefined): Promise<{ user: UserRow; request: AuthRequest; provider: string }> {
    const state = typeof q.state === 'string' ? q.state : '';
    if (!state || !browserState || state !== browserState) throw new FederationError('This sign-in did not start in this browser (or it was already used). Start again from the sign-in page.');
    const pending = await federationRepo.useState(this.db, hex(state));
    if (!pending) throw new FederationError('This sign-in expired or was already used. Start again from the sign-in page.');
    const p = await this.provider(pending.provider_id);
    if (typeof q.error === 'string') throw new FederationError(`${p.name} did not sign you in (${q.error}).`);
    if (typeof q.code !== 'string' || !q.code) throw new FederationError(`${p.name} sent no authorization code.`);
    const d = await this.discovery(p);
    const secret = decrypt(this.masterKey, p.client_secret_enc, `upstream:${p.id}`);
    let tokens: { id_token?: string; access_token?: string };
    try {
      const res = await fetch(d.token_endpoint, {
        method: 'POST', signal: AbortSignal.timeout(10_000),
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${encodeURIComponent(p.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: q.code, redirect_uri: this.callbackUrl, code_verifier: pending.code_verifier }).toString(),
      });
      tokens = await res.json() as { id_token?: string };
      if (!res.ok) throw new Error(`${res.status} ${(tokens as { error?: string }).error ?? ''}`.trim());
    } catch (err) {
      throw new FederationError(`${p.name} refused the sign-in (${(err as Error).message}).`);
    }
    if (!tokens.id_token) throw new FederationError(`${p.name} sent no ID token.`);
    const claims = await this.verify(p, d, secret, tokens.id_token, pending.nonce);
    const user = await this.link(p, { ...claims, ...(await this.userinfo(p, d, tokens.access_token, claims.sub!)) });
    return { user, request: pending.request, provider: p.id };
  }

  /**
   * The upstream's userinfo (OpenID Connect Core 5.3), when its metadata has one: a
   * provider following the spec may put only sub in the id_token (node-oidc-provider's
   * default) and the email and names there. Its sub must be the id_token's (5.3.2). Only
   * email, email_verified and the names are taken; the id_token's stay as the fallback.
   */
  private async userinfo(p: ProviderRow, d: Discovery, accessToken: string | undefined, sub: string): Promise<Record<string, unknown>> {
    if (!d.userinfo_endpoint || !accessToken) return {};
    let body: Record<string, unknown>;
    try {
      const res = await fetch(d.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      if (!/^application\/json/i.test(res.headers.get('content-type') ?? '')) return {}; // a signed (JWT) answer: the id_token's claims
      body = await res.json() as Record<string, unknown>;
    } catch (err) {
      throw new FederationError(`${p.name} did not answer its userinfo request (${(err as Error).message}).`);
    }
    if (body.sub !== sub) throw new FederationError(`${p.name}'s userinfo is about another user than its ID token (sub differs).`);
    const out: Record<string, unknown> = {};
    for (const k of ['email', 'email_verified', 'given_name', 'family_name'] as const) if (body[k] !== undefined) out[k] = body[k];
    return out;
  }

  private async verify(p: ProviderRow, d: Discovery, secret: string, idToken: string, nonce: string): Promise<JWTPayload> {
    try {
      const alg = decodeProtectedHeader(idToken).alg;
      const options = { issuer: p.issuer, audience: p.client_id, clockTolerance: 30 };
      let payload: JWTPayload;
      if (alg === 'HS256') {
        payload = (await jwtVerify(idToken, new TextEncoder().encode(secret), { ...options, algorithms: ['HS256'] })).payload;
      } else {
        if (!d.jwks_uri) throw new Error('no jwks_uri');
        let set = this.jwks.get(p.id);
        if (!set) {
          set = createRemoteJWKSet(new URL(d.jwks_uri));
          this.jwks.set(p.id, set);
        }
        payload = (await jwtVerify(idToken, set, { ...options, algorithms: ['RS256', 'ES256', 'PS256', 'EdDSA'] })).payload;
      }
      if (payload.nonce !== nonce) throw new Error('nonce mismatch');
      if (typeof payload.sub !== 'string' || !payload.sub) throw new Error('no sub');
      return payload;
    } catch (err) {
      throw new FederationError(`${p.name}'s ID token did not verify (${(err as Error).message}).`);
    }
  }

  private async link(p: ProviderRow, claims: JWTPayload): Promise<UserRow> {
    const sub = claims.sub!;
    const linked = await federationRepo.linkedUser(this.db, p.id, sub);
    if (linked) {
      const user = await idpRepo.user(this.db, linked);
      if (!user || user.blocked) throw new FederationError('This account cannot sign in.');
      return user;
    }
    const email = typeof claims.email === 'string' ? claims.email.trim() : '';
    if (!email) throw new FederationError(`${p.name} did not share an email address: it is needed to sign in.`);
    const verified = claims.email_verified === true;
    let user = await idpRepo.userByEmail(this.db, email);
    if (user) {
      // An unverified address would let anyone who registers it upstream take the account.
      if (!verified) throw new FederationError(`An account with ${email} exists, and ${p.name} has not verified that address: sign in with your password.`);
      if (user.blocked) throw new FederationError('This account cannot sign in.');
    } else {
      await this.identity.createUser({
        email, password: randomBytes(32).toString('base64url'), email_verified: verified,
        ...(typeof claims.given_name === 'string' ? { given_name: claims.given_name.slice(0, 100) } : {}),
        ...(typeof claims.family_name === 'string' ? { family_name: claims.family_name.slice(0, 100) } : {}),
      });
      user = (await idpRepo.userByEmail(this.db, email))!;
    }
    await federationRepo.link(this.db, p.id, sub, user.id);
    return user;
  }
}
