// The sign-in of payd's own pages (the dashboard, the console) through the identity
// provider, as its built-in first-party public clients: authorization code + PKCE (S256).
// The state, the verifier and where to go back are kept until the callback in a signed
// login cookie on the application's path (src/web). Each application keeps what is its
// own: who may get in, its failure pages and its session.
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import { Problem } from '../../platform/http/problem.ts';
import { type CookieScope, clearCookie, readSignedCookie, setSignedCookie } from '../../web/index.ts';
import type { IdentityService } from './idp.service.ts';

export interface FirstPartySignInOptions {
  identity: IdentityService;
  clientId: string;
  /** The application's callback (its redirect_uri). */
  callback: string;
  /** The origin of the provider's /oauth/authorize. */
  authorizeOrigin: string;
  /** The login cookie's name, and its scope (the application's path). */
  cookie: string;
  scope: CookieScope;
}

export interface SignedInAtCallback {
  userId: string;
  /** The provider's sign-in session the code came from (undefined when it has none). */
  sid: string | undefined;
  /** Where start() was told to go back, as given (the caller checks it). */
  back: string | undefined;
}

export interface FirstPartySignIn {
  /** Sends the browser to the provider to sign in: the login cookie, and a 303 to /oauth/authorize. */
  start(reply: FastifyReply, back?: string): void;
  /**
   * The callback's sign-in: the user and the provider's session of the code, when the
   * state is the login cookie's and the provider exchanges the code; else undefined.
   */
  callback(request: FastifyRequest): Promise<SignedInAtCallback | undefined>;
  /** The sign-in is over: the login cookie is cleared. */
  done(reply: FastifyReply): void;
}

export function firstPartySignIn(o: FirstPartySignInOptions): FirstPartySignIn {
  return {
    start(reply, back) {
      const verifier = randomBytes(32).toString('base64url');
      const state = randomBytes(16).toString('base64url');
      const url = new URL(`${o.authorizeOrigin}/oauth/authorize`);
      url.search = new URLSearchParams({
        response_type: 'code', client_id: o.clientId, redirect_uri: o.callback, scope: 'openid profile email', state,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
      }).toString();
      setSignedCookie(reply, o.cookie, back === undefined ? `${state}.${verifier}` : `${state}.${verifier}.${Buffer.from(back).toString('base64url')}`, o.scope);
      reply.redirect(url.toString(), 303);
    },

    async callback(request) {
      const q = request.query as Record<string, string>;
      const [state, verifier, back] = (readSignedCookie(request, o.cookie) ?? '').split('.');
      if (!state || !verifier || q.state !== state || !q.code) return undefined;
      const sid = await o.identity.codeSession(q.code);
      try {
        const tokens = await o.identity.exchangeCode({}, { code: q.code, redirect_uri: o.callback, client_id: o.clientId, code_verifier: verifier });
        return { userId: String(decodeJwt(tokens.access_token).sub), sid, back: back === undefined ? undefined : Buffer.from(back, 'base64url').toString() };
      } catch (err) {
        if (err instanceof Problem) return undefined;
        throw err;
      }
    },

    done: (reply) => clearCookie(reply, o.cookie, o.scope),
  };
}
