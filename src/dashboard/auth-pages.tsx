// The bodies of the sign-in's and the sign-out's answers (pages outside an entity).
import type { VNode } from 'preact';

export const SignInFailed = (): VNode => <p role="alert">The sign-in did not complete. <a href="/dashboard">Try again</a>.</p>;

export const SignOutRefused = (): VNode => <p role="alert">The form expired; reload the page.</p>;

export const SignedOut = (): VNode => <p>You are signed out. <a href="/dashboard">Sign in again</a>.</p>;
