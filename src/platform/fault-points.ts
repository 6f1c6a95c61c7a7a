// Named kill points for the fault-injection tests (test/faults): when the setting
// PAYD_FAULT_KILL_AT names a step ("capture:after-record", or "capture:after-record@3"
// for its third pass), the process kills itself with SIGKILL there, as a crash would.
// Unset (always, in production), a fault point is one comparison.
//
// Steps: <kind>:after-reserve (the PENDING record is committed), <kind>:after-partner
// (the partner answered; nothing recorded), <kind>:after-record (the answer is recorded;
// the payment or operation is not finalized), <kind>:after-finalize (before the answer
// is sent), where kind is authorize, capture, refund or void; recovery:after-claim,
// recovery:after-partner; and reversal:before-send (a split that failed is recorded with
// the reversal of its authorized parts; their voids are not sent yet).

let target: { step: string; pass: number } | undefined;
let passes = 0;

/** Arms the kill point (from config.faultKillAt); undefined disarms it. */
export function armFaultPoint(spec: string | undefined): void {
  passes = 0;
  if (!spec) {
    target = undefined;
    return;
  }
  const m = /^([a-z-]+:[a-z-]+)(?:@(\d+))?$/.exec(spec);
  if (!m) throw new Error(`bad fault point "${spec}"`);
  target = { step: m[1]!, pass: Number(m[2] ?? 1) };
}

export function faultPoint(step: string): void {
  if (target === undefined || target.step !== step) return;
  passes += 1;
  if (passes >= target.pass) process.kill(process.pid, 'SIGKILL');
}
