// Who reaches what through the Management API: the one place where a scope's reach is
// decided. Routes check that a token holds the route's scope (management.authorize); the
// service then asks this module whether that caller reaches the user or application it
// names. docs/identity.md ("Who reaches what") is this table in prose, and
// test/identity/authority.test.ts walks AUTHORITY row by row against the real API.
//
// Two kinds of target are privileged, because their credentials open more than the
// identity provider itself:
// - console administrators (idp_users.is_admin): the console manages every application,
//   logs in as anyone and reads the mail outbox;
// - dashboard members (a dashboard_members row): the payment dashboard moves money
//   (captures, refunds, voids), makes API keys and webhooks.
// A Management API application reaches them only with a scope named for them. The check
// reads dashboard_members itself (not a hook the dashboard registers): a process serving
// the identity role alone has no dashboard, and must refuse just the same.
import { problems } from '../../platform/http/problem.ts';

export const MANAGEMENT_SCOPES = [
  'read:users', 'create:users', 'update:users', 'update:admins', 'update:dashboard_members', 'read:user_events', 'login_as:users',
  'read:clients', 'create:clients', 'update:clients', 'delete:clients', 'manage:all_clients',
] as const;
export type ManagementScope = (typeof MANAGEMENT_SCOPES)[number];

/** What each scope reaches, and what it never reaches (docs/identity.md is written from this). */
export const AUTHORITY: Readonly<Record<ManagementScope, { reaches: string; never: string }>> = {
  'read:users': { reaches: 'every user\'s profile (list, find by email, get)', never: 'password hashes, factors, sessions' },
  'create:users': { reaches: 'new ordinary users (never administrators or dashboard members)', never: 'is_admin, dashboard membership' },
  'update:users': {
    reaches: 'ordinary users: names, email_verified, password, blocked',
    never: 'console administrators (needs update:admins as well), dashboard members (needs update:dashboard_members as well)',
  },
  'update:admins': {
    reaches: 'with update:users: console administrators (every field), and granting or withdrawing is_admin; with login_as:users: logging in as an administrator',
    never: 'dashboard members (needs update:dashboard_members as well)',
  },
  'update:dashboard_members': {
    reaches: 'with update:users: users who are members of a merchant\'s dashboard (every field); with login_as:users: logging in as one',
    never: 'console administrators (needs update:admins as well); dashboard roles (the dashboard\'s team page and the operator API decide those)',
  },
  'read:user_events': { reaches: 'every user\'s events', never: '' },
  'login_as:users': {
    reaches: 'logging in as an ordinary user (recorded with the caller\'s client id)',
    never: 'administrators (needs update:admins as well), dashboard members (needs update:dashboard_members as well), blocked users',
  },
  'read:clients': { reaches: 'every application (never its secret) and its audit', never: 'client secrets' },
  'create:clients': { reaches: 'registering applications, which then belong to the caller', never: 'Management API scopes for the new application' },
  'update:clients': {
    reaches: 'applications the caller registered, and the caller itself: name, Allowed Callback URLs, Allowed Origins, first party, secret rotation, token revocation',
    never: 'other applications (needs manage:all_clients), built-in applications',
  },
  'delete:clients': { reaches: 'applications the caller registered, and the caller itself', never: 'other applications (needs manage:all_clients), built-in applications' },
  'manage:all_clients': {
    reaches: 'with update:clients or delete:clients: every application that is not built in (name, Allowed Callback URLs, Allowed Origins, token revocation, deletion)',
    never: 'another application\'s first-party flag or secret; built-in applications; granting it (as every scope) is for the operator and console administrators only',
  },
};

/** The Management API application behind a token, and the scopes it holds now. */
export interface Caller {
  clientId: string;
  scopes: ReadonlySet<string>;
}

/** What makes a user privileged (see the header). */
export interface UserStanding {
  is_admin: boolean;
  dashboard_member: boolean;
}

/** The scopes, beyond the route's own, that a caller needs to change or log in as this user. */
export function scopesToReachUser(u: UserStanding): ManagementScope[] {
  return [...(u.is_admin ? ['update:admins' as const] : []), ...(u.dashboard_member ? ['update:dashboard_members' as const] : [])];
}

/** 403 naming the missing scope when the caller does not reach the user. */
export function assertReachesUser(caller: Caller, u: UserStanding, what: 'change' | 'log in as'): void {
  for (const scope of scopesToReachUser(u)) {
    if (!caller.scopes.has(scope)) {
      const who = scope === 'update:admins' ? 'a console administrator' : 'a member of a merchant\'s dashboard';
      throw problems.forbidden(`This user is ${who}: to ${what} them this token needs the scope ${scope} as well.`);
    }
  }
}

export type ClientAction = 'update' | 'delete' | 'rotate_secret' | 'revoke_tokens';

/**
 * 403 when the caller does not reach the application for this action: its own
 * applications (registered by it) and itself are reached; others only with
 * manage:all_clients, and even then never their first-party flag or their secret.
 * Built-in applications are refused before this (applications.ts).
 */
export function assertReachesClient(caller: Caller, app: { client_id: string; created_by: string | null }, action: ClientAction, patch?: { first_party?: boolean | undefined }): void {
  if (app.client_id === caller.clientId || app.created_by === caller.clientId) return;
  if (!caller.scopes.has('manage:all_clients')) {
    throw problems.forbidden('This application was not registered by the caller: reaching it needs the scope manage:all_clients.');
  }
  if (action === 'rotate_secret') throw problems.forbidden('The secret of an application registered by another caller is out of reach of the Management API.');
  if (patch?.first_party !== undefined) throw problems.forbidden('The first-party flag of an application registered by another caller is out of reach of the Management API.');
}
