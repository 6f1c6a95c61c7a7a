// How far V8 lets the heap grow past what survived the last full garbage collection
// before it collects again. V8's own factor, chosen from the collector's speed, goes up
// to 4: under load the old generation fills with short-lived request objects that were
// promoted (they outlived two young collections while their request waited on the
// database), and the process reached about 240 MB for a live heap of about 31 MB
// (docs/performance.md). payd asks for 1.5 instead: the same work collects more often,
// and the peak stays near 180 MB, for a throughput the bench could not tell apart.
//
// V8 reads this flag at each full collection, so setting it once the process runs takes
// effect (unlike the young generation's size, which is fixed when the heap is created).
// An operator who gives the flag to node keeps theirs (`node --heap-growing-percent=0
// bin/payd.js start` for V8's own choice; Node does not accept it in NODE_OPTIONS).
import v8 from 'node:v8';

export const HEAP_GROWING_PERCENT = 50;
const FLAG = '--heap-growing-percent';

/** Whether the operator passed the flag to node; `_` and `-` are the same to V8. */
export function operatorSetHeapGrowing(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => a.split('=')[0]!.replaceAll('_', '-') === FLAG);
}

/** Sets payd's heap growing factor unless the operator chose one; returns the percent in force, or undefined for the operator's. */
export function tuneHeapGrowing(execArgv: readonly string[] = process.execArgv): number | undefined {
  if (operatorSetHeapGrowing(execArgv)) return undefined;
  v8.setFlagsFromString(`${FLAG}=${HEAP_GROWING_PERCENT}`);
  return HEAP_GROWING_PERCENT;
}
