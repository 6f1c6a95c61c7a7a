// The schema-driven fuzzer, second half of the requests of a run (test/fuzz/harness.ts).
import { defineFuzz } from './harness.ts';

defineFuzz(2, 2, 'test/fuzz/openapi-fuzz-2.test.ts');
