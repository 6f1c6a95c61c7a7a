// Inline answers: an optimisation for partners that run inside payd's own process (the
// simulators), not part of the connector port. A connector across a network never
// implements it; payd calls it only when a registered connector has it.
//
// The answer to a call when it is a pure function of the request and has no effect
// outside payd's own records (nothing is held or moved anywhere else). payd then writes
// the call and its answer in one statement, without the write-ahead PENDING record that
// guards calls with effects elsewhere: a crash can only lose a decision that changed
// nothing. undefined: the partner must be called the regular way (authorize, capture, ...).
import type { AuthorizeRequest, FollowUpRequest, PartnerConnector, PartnerResult } from './port.ts';

/** A call a partner may answer inline. */
export type InlineCall =
  | { kind: 'AUTHORIZATION'; request: AuthorizeRequest }
  | { kind: 'CAPTURE' | 'REFUND' | 'VOID'; request: FollowUpRequest };

export interface InlinePartner {
  answerInline(call: InlineCall): PartnerResult | undefined;
}

/** The inline answer of an in-process partner, or undefined (not such a partner, or not a pure decision). */
export function answerInline(connector: PartnerConnector | undefined, call: InlineCall): PartnerResult | undefined {
  const inline = connector as (PartnerConnector & Partial<InlinePartner>) | undefined;
  return typeof inline?.answerInline === 'function' ? inline.answerInline(call) : undefined;
}
