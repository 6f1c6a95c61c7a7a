// npm run bench: the throughput of `payd start` against its baselines (bench/throughput.ts).
// Env: see bench/throughput.ts.
import { runThroughput } from './throughput.ts';

await runThroughput();
