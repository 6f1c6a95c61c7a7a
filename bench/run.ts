// npm run bench: the throughput of `payd start` against its baselines (bench/throughput.ts),
// then the start-up times and RSS (bench/startup.ts). Env: see each file.
import { runThroughput } from './throughput.ts';

await runThroughput();
// Start-up times and RSS (bench/startup.ts, issue 17); with BENCH_ONLY, only when it names "startup".
if (!process.env.BENCH_ONLY || process.env.BENCH_ONLY.includes('startup')) await (await import('./startup.ts')).startupBench();
