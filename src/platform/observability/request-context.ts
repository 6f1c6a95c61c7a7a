// The request a piece of work belongs to, for log lines written far from the route (a
// partner call deep in a service). Set for each request in an onRequest hook (app.ts).
import { AsyncLocalStorage } from 'node:async_hooks';

export const requestContext = new AsyncLocalStorage<{ requestId: string }>();

/** The id of the request being served, when there is one (not in background workers). */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}
