// npm run bench: the throughput of `payd start` against its baselines (bench/throughput.ts),
// then the start-up times and RSS (bench/startup.ts). Env: see each file.
import { runThroughput } from './throughput.ts';

await runThroughput();
await (await import('./startup.ts')).startupBench(); // start-up times and RSS (bench/startup.ts, issue 17)
