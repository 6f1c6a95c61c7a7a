// The schema-driven fuzzer, first half of the requests of a run (test/fuzz/harness.ts
// says what it sends and asserts, and how to replay a failure from the printed seed).
import { defineFuzz } from './harness.ts';

defineFuzz(1, 2, 'test/fuzz/openapi-fuzz.test.ts');
