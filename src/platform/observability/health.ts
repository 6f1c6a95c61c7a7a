// Liveness (the process answers) and readiness (the database answers, not shutting down).
// Liveness never touches the database: a database outage must not get payd restarted
// (it reconnects by itself). Readiness answers within READY_TIMEOUT_MS whatever the
// database does, so that a load balancer's probe never hangs.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/index.ts';
import { healthRepo } from './health.repo.ts';

export const READY_TIMEOUT_MS = 2000;

export async function healthRoutes(app: FastifyInstance, { db, isShuttingDown }: { db: Db; isShuttingDown: () => boolean }) {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (isShuttingDown()) return reply.code(503).send({ status: 'shutting-down' });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
    });
    const ping = healthRepo.ping(db).then(() => true, () => false);
    const ok = await Promise.race([ping, timeout]);
    clearTimeout(timer);
    if (ok) return { status: 'ready' };
    return reply.code(503).header('retry-after', '2').send({ status: 'database-unavailable' });
  });
}
