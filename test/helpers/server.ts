// Kept for the files that still import the old path (test/webhooks, test/partners): the
// one way to start payd in tests is ./processes.ts, and these are its names there.
export { call, freePort, onboard, type PaydProcess as ServerProcess, SERVER_MASTER_KEY, startPayd as startServer } from './processes.ts';
