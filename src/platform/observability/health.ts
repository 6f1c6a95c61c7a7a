// Liveness (the process answers) and readiness (the database answers, not shutting down).
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/index.ts';

export async function healthRoutes(app: FastifyInstance, { db, isShuttingDown }: { db: Db; isShuttingDown: () => boolean }) {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (isShuttingDown()) return reply.code(503).send({ status: 'shutting-down' });
    try {
      await db.query('SELECT 1');
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'database-unavailable' });
    }
  });
}
