// The start-up bench's baseline (bench/startup.ts): a bare Fastify process answering
// GET /healthz, started the same way as payd (node on a JavaScript file), so that the
// ratio shows what payd adds to Node and Fastify themselves.
import Fastify from 'fastify';

const app = Fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST ?? '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
