// Named kill points for the fault-injection tests (test/faults): when the setting
// PAYD_FAULT_KILL_AT names a step ("capture:after-record", or "capture:after-record@3"
// for its third pass), the process kills itself with SIGKILL there, as a crash would, or
// freezes with SIGSTOP (PAYD_FAULT_SIGNAL=SIGSTOP: a process stopped in the middle of
// its work, holding what it holds). Unset (always, in production), a fault point is one
// comparison.
//
// Steps: <kind>:after-reserve (the PENDING record is committed), <kind>:after-partner
// (the partner answered; nothing recorded), <kind>:after-record (the answer is recorded;
// the payment or operation is not finalized), <kind>:after-finalize (before the answer
// is sent), <kind>:under-lock (capture, refund, void: inside the transaction that holds
// the payment's row lock, reserve's last reading), where kind is authorize, capture, refund or void; recovery:after-claim,
// recovery:after-partner; and reversal:before-send (a split that failed is recorded with
// the reversal of its authorized parts; their voids are not sent yet).

let target: { step: string; pass: number } | undefined;
let passes = 0;
let signal: NodeJS.Signals = 'SIGKILL';

/** Arms the kill point (from config.faultKillAt, with config.faultSignal); undefined disarms it. */
export function armFaultPoint(spec: string | undefined, sig: 'SIGKILL' | 'SIGSTOP' = 'SIGKILL'): void {
  passes = 0;
  signal = sig;
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
  if (passes === target.pass || (passes > target.pass && signal === 'SIGKILL')) process.kill(process.pid, signal);
}
