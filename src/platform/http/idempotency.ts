// Idempotency keys, one mechanism for every keyed creating request (spec, Errors 3 to 5;
// docs/decisions.md "Idempotency"). A route opts in with `idempotency.route({ scope,
// lookup })`, which gives it its config and hooks:
//   - the JSON parser hands the raw body to `bodySeen`, which keeps only its HMAC;
//   - preHandler (the body is valid, the caller authenticated) claims the key in its
//     scope with the request's fingerprint (HMAC-SHA256 of method, route and raw body).
//     A key already claimed is a replay: held while the first request runs, then 409
//     write-conflict with resource_id (what the first request created) and
//     same_request (whether this request is the first one again, or another one);
//   - onSend records what the request created (markCreated) once it has answered, or
//     gives the key back when the request created nothing (a refusal);
//   - a request refused before its handler (not JSON, wrong media type, too large, a
//     field that fails validation) whose key is already processed in its scope is
//     answered that 409 (same_request false) instead of the refusal (refusedBeforeHandler,
//     from the error handler).
// The resource's own uniqueness stays the guarantee that nothing is created twice
// (payments: the key columns of payments and payment_operations); `lookup` reads it, so
// that a first request that died after creating its resource is still found.
// A route whose resource keeps its key and the request's fingerprint in its own row
// (`ownKey`: payments and their captures, refunds and voids) takes no claim: its
// preHandler only computes the fingerprint (requestFingerprint), the resource's write
// stores it, and any refusal of a keyed request (before or in its handler, a 409 of the
// handler's included) is answered from `lookup`: 409 write-conflict naming the first
// request's resource, same_request by comparing fingerprints. A keyed creation then costs
// no statement more than one without a key.
import { createHmac, randomUUID, type Hmac } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import { Type } from 'typebox';
import type { Db } from '../db/index.ts';
import { type ClaimRow as Claim, idempotencyRepo } from './idempotency.repo.ts';
import { PROBLEM_TYPE, type Problem, problems } from './problem.ts';

/** Shape check of an x-idempotency-key header value. */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The x-idempotency-key header of a route's schema. */
export const idempotencyHeaders = (description: string) => Type.Object({
  'x-idempotency-key': Type.Optional(Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$', description })),
});

export interface IdempotencyConfig {
  /** HMAC key of the fingerprints (derived from the master key). */
  key: Buffer;
  /** A replay of a key whose first request still runs is held this many times the interval. */
  holdAttempts: number;
  holdIntervalMs: number;
  /**
   * A claim left running this long, whose request created nothing that `lookup` finds,
   * belongs to a request that died: the next request with the key takes it over. Routes
   * with a lookup take it over as soon as the hold has ended (their resource's own
   * uniqueness keeps them at most once).
   */
  staleClaimMs: number;
}

export interface IdempotentRoute {
  /** The key's scope (with the entity): undefined when the request cannot name one (then keys are not looked at). */
  scope: (request: FastifyRequest) => string | undefined;
  /**
   * The resource the first request with this key created, read from the resource itself
   * (held while it is in flight, as the route sees fit); undefined when there is none.
   */
  lookup?: (entityId: string, scope: string, key: string) => Promise<FirstRequest | undefined>;
  /**
   * The resource stores its key and the request's fingerprint itself (requestFingerprint):
   * no claim row is written (needs `lookup`).
   */
  ownKey?: boolean;
  /**
   * The request's path (the ids in it), not only its route, is part of its fingerprint: for
   * an entity-wide scope on a route of one resource (POST /v2/webhook-endpoints/{id}/test),
   * so that the key reused on another resource is another request (same_request false).
   */
  pathInFingerprint?: boolean;
}

/** What the first request with a key created, and its fingerprint when the resource keeps it. */
export interface FirstRequest {
  id: string;
  fingerprint?: string | null;
}

interface RequestState {
  body?: Hmac;
  /** The request's fingerprint, once computed. */
  fingerprint?: string;
  claimed?: { entityId: string; scope: string; key: string; claimId: string };
  created?: string;
}

const STATE = Symbol('idempotency');
type WithState = FastifyRequest & { [STATE]?: RequestState };
const stateOf = (request: FastifyRequest): RequestState => ((request as WithState)[STATE] ??= {});

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes x-idempotency-key (platform/http/idempotency.ts). */
    idempotency?: { keys: IdempotencyKeys; route: IdempotentRoute };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The well-formed x-idempotency-key of a request of an idempotent route, with its entity and scope. */
function keyed(request: FastifyRequest): { keys: IdempotencyKeys; route: IdempotentRoute; entityId: string; scope: string; key: string } | undefined {
  const idem = request.routeOptions.config?.idempotency;
  const key = request.headers['x-idempotency-key'];
  const entityId = request.principal?.entityId;
  if (!idem || typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key) || !entityId) return undefined;
  const scope = idem.route.scope(request);
  return scope === undefined ? undefined : { ...idem, entityId, scope, key };
}

/**
 * The fingerprint of a keyed request on an `ownKey` route, for its resource's row;
 * undefined without a key.
 */
export function requestFingerprint(request: FastifyRequest): string | undefined {
  return stateOf(request).fingerprint;
}

/** What the request created: recorded against its idempotency key when it has answered. */
export function markCreated(request: FastifyRequest, resourceId: string): void {
  stateOf(request).created = resourceId;
}

/** The raw JSON text of a request's body, from the parser: kept as its HMAC only, on idempotent routes with a key. */
export function bodySeen(request: FastifyRequest, raw: string): void {
  const idem = request.routeOptions.config?.idempotency;
  if (!idem || request.headers['x-idempotency-key'] === undefined) return;
  stateOf(request).body = createHmac('sha256', idem.keys.config.key).update(raw);
}

export class IdempotencyKeys {
  constructor(private readonly db: Db, readonly config: IdempotencyConfig) {}

  /** The config and hooks of a route that takes x-idempotency-key. */
  route(route: IdempotentRoute) {
    if (route.ownKey && !route.lookup) throw new Error('an ownKey route needs a lookup');
    const preHandler: preHandlerAsyncHookHandler = async (request) => {
      const k = keyed(request);
      if (!k) return;
      if (route.ownKey) stateOf(request).fingerprint = this.fingerprint(request);
      else await this.claim(request, k.entityId, k.scope, k.key, route);
    };
    const onSend: onSendHookHandler<unknown> = async (request, reply, payload) => {
      await this.settle(request, reply);
      return payload;
    };
    return { config: { idempotency: { keys: this, route } }, preHandler, onSend };
  }

  /** The request's fingerprint: HMAC-SHA256 of its method, route (or path: pathInFingerprint) and raw body (hex). */
  private fingerprint(request: FastifyRequest): string {
    const known = stateOf(request).fingerprint;
    if (known) return known;
    const body = stateOf(request).body?.digest('hex')
      ?? (request.body === undefined ? '' : `parsed:${JSON.stringify(request.body)}`);
    const target = request.routeOptions.config?.idempotency?.route.pathInFingerprint
      ? request.url.split('?')[0]!.toLowerCase() : request.routeOptions.url;
    return createHmac('sha256', this.config.key).update(`${request.method} ${target}\n${body}`).digest('hex');
  }

  private async read(entityId: string, scope: string, key: string): Promise<Claim | undefined> {
    const { rows } = await idempotencyRepo.read(this.db, entityId, scope, key);
    return rows[0];
  }

  /** Reads the key's claim, waiting while its first request runs. */
  private async held(entityId: string, scope: string, key: string): Promise<Claim | undefined> {
    let claim = await this.read(entityId, scope, key);
    for (let attempt = 0; claim && !claim.completed_at && attempt < this.config.holdAttempts; attempt++) {
      await sleep(this.config.holdIntervalMs);
      claim = await this.read(entityId, scope, key);
    }
    return claim;
  }

  /**
   * Claims the key for this request, or answers the replay: 409 write-conflict naming what
   * the first request created, or 409 resource-busy while that one still runs.
   */
  private async claim(request: FastifyRequest, entityId: string, scope: string, key: string, route: IdempotentRoute): Promise<void> {
    const fingerprint = this.fingerprint(request);
    const instance = request.url.split('?')[0]!;
    for (let round = 0; round < 3; round++) {
      const claimId = randomUUID();
      const { rows } = await idempotencyRepo.claim(this.db, entityId, scope, key, claimId, fingerprint);
      if (rows.length) {
        stateOf(request).claimed = { entityId, scope, key, claimId };
        return;
      }
      const first = await this.held(entityId, scope, key);
      if (!first) continue; // given back meanwhile (the first request created nothing): claim it again
      const resourceId = first.resource_id ?? (route.lookup ? (await route.lookup(entityId, scope, key))?.id : undefined);
      if (resourceId) throw problems.idempotencyViolation(instance, resourceId, first.fingerprint === fingerprint);
      if (first.completed_at) continue; // (completed without a resource: not written so; defensive)
      // Still running after the hold, with nothing created that can be found: a request
      // that died takes no key with it.
      const { rows: taken } = await idempotencyRepo.takeOver(this.db, entityId, scope, key, claimId, fingerprint,
        first.claim_id, route.lookup ? 0 : this.config.staleClaimMs);
      if (taken.length) {
        stateOf(request).claimed = { entityId, scope, key, claimId };
        return;
      }
      throw problems.resourceBusy('The first request with this idempotency key is still running. Retry after Retry-After seconds, with the same key.', 1);
    }
    throw problems.resourceBusy('Other requests with this idempotency key keep starting and failing. Retry after Retry-After seconds, with the same key.', 1);
  }

  /** After the answer: records what the request created, or gives its key back. */
  private async settle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const state = stateOf(request);
    const claimed = state.claimed;
    if (!claimed) return;
    state.claimed = undefined;
    const { entityId, scope, key, claimId } = claimed;
    try {
      const created = reply.statusCode < 300 ? state.created : undefined;
      if (created) {
        await idempotencyRepo.complete(this.db, entityId, scope, key, claimId, created);
      } else {
        // A refusal: the key was not processed. (A failure after the resource was created
        // leaves it to the resource's own key, where there is one: payments.)
        await idempotencyRepo.release(this.db, entityId, scope, key, claimId);
      }
    } catch (err) {
      // The answer stands; the claim is taken over later (staleClaimMs, or at once where a lookup exists).
      request.log.warn({ err }, 'idempotency key not settled');
    }
  }

  /**
   * A request refused before its handler ran (its body is not JSON, too large, of another
   * media type, or fails validation) whose key is already processed in its scope: the
   * 409 write-conflict naming the first request's resource, since the same key came with
   * another request. undefined: the refusal stands.
   */
  static async refusedBeforeHandler(request: FastifyRequest, problem: Problem): Promise<Problem | undefined> {
    if (problem.status < 400 || problem.status >= 500 || problem.status === 401 || problem.status === 403) return undefined;
    if (problem.type === PROBLEM_TYPE.resourceBusy) return undefined;
    const k = keyed(request);
    if (!k) return undefined;
    if (k.route.ownKey) return k.keys.refusedOwnKey(request, k.entityId, k.scope, k.key, k.route.lookup!);
    if (problem.type === PROBLEM_TYPE.writeConflict) return undefined;
    const state = (request as WithState)[STATE];
    if (state?.claimed || state?.created) return undefined; // the handler ran: its own refusal
    const first = await k.keys.held(k.entityId, k.scope, k.key);
    const resourceId = first?.resource_id ?? (k.route.lookup ? (await k.route.lookup(k.entityId, k.scope, k.key))?.id : undefined);
    return resourceId ? problems.idempotencyViolation(request.url.split('?')[0]!, resourceId, false) : undefined;
  }

  /**
   * A keyed request of an ownKey route refused (before or in its handler, including the
   * handler's own 409): when the key already made a resource, the 409 naming it, with
   * same_request from the fingerprints (the resource's, else a claim the previous version
   * of payd wrote in idempotency_keys); undefined: the refusal stands.
   */
  private async refusedOwnKey(request: FastifyRequest, entityId: string, scope: string, key: string,
    lookup: NonNullable<IdempotentRoute['lookup']>): Promise<Problem | undefined> {
    const first = await lookup(entityId, scope, key);
    if (!first) return undefined;
    const stored = first.fingerprint ?? (await this.read(entityId, scope, key))?.fingerprint;
    return problems.idempotencyViolation(request.url.split('?')[0]!, first.id,
      stored ? stored === this.fingerprint(request) : undefined);
  }
}
