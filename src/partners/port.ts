// The connector port: what payd asks of a payment partner (acquirer, gift-card
// processor, buy-now-pay-later provider). A connector is a stateless translator
// between these types and the partner's API; persistence and the payment state
// machine belong to the core. An unknown partner status maps to PENDING.

export type PartnerOutcome = 'SUCCESS' | 'PENDING' | 'REFUSED' | 'ERROR';

export interface CardInstrument {
  type: 'CARD';
  number: string;
  expiry_month: string;
  expiry_year: string;
  cvv?: string;
  holder_name?: string;
}

export interface GiftCardInstrument {
  type: 'GIFT_CARD';
  number: string;
  pin?: string;
}

export interface OtherInstrument {
  type: 'NONE';
}

export type Instrument = CardInstrument | GiftCardInstrument | OtherInstrument;

/** Card facts payd may keep: never the number or the CVV. */
export interface CardDetails {
  bin: string;
  type: string;
  last_four_digits: string;
  holder_name?: string;
  expiry_month: string;
  expiry_year: string;
  country_code?: string;
  fingerprint: string;
  selected_network: string;
  three_ds?: {
    eci: string;
    version: string;
    flow: 'FRICTIONLESS' | 'CHALLENGE';
    ds_transaction_id: string;
    acs_transaction_id: string;
  };
}

export interface Redirection {
  url: string;
  method: 'GET' | 'POST';
}

export interface PartnerResult {
  outcome: PartnerOutcome;
  partner_reference?: string;
  partner_status: string;
  partner_status_description?: string;
  status_code: string;
  card?: CardDetails;
  redirection?: Redirection;
  token_saved?: boolean;
}

export interface AuthorizeRequest {
  /** Idempotency key at the partner: a retry with the same key returns the first result. */
  key: string;
  entityId: string;
  method: string;
  amount: number;
  currency: string;
  instrument: Instrument;
  /** Card facts computed by payd (fingerprint keyed with payd's secret), for the partner to echo. */
  card?: CardDetails;
  save_token?: boolean;
  customer?: Record<string, unknown> | undefined;
  browser?: Record<string, unknown> | undefined;
  three_ds?: { challenge_indicator?: string; challenge_exemption?: string } | undefined;
  /** Where the shopper returns after a challenge (payd's own return endpoint). */
  return_url: string;
}

export interface FollowUpRequest {
  key: string;
  /** partner_reference of the authorization this operation draws on. */
  authorization_reference: string;
  amount: number;
  currency: string;
}

export interface SyncRequest {
  key: string;
  kind: 'AUTHORIZATION' | 'CAPTURE' | 'REFUND' | 'VOID';
}

/** A call a partner may answer inline (see PartnerConnector.answerInline). */
export type InlineCall =
  | { kind: 'AUTHORIZATION'; request: AuthorizeRequest }
  | { kind: 'CAPTURE' | 'REFUND' | 'VOID'; request: FollowUpRequest };

export interface PartnerConnector {
  readonly name: string;
  readonly methods: readonly string[];
  /** Per-partner limits used by eligibility (amount bounds in minor units, currencies). */
  readonly limits: { currencies: readonly string[]; min_amount?: number; max_amount?: number };
  /** What a payment must carry for this partner to accept it (checkout offers it only then). */
  readonly requires?: readonly 'customer.email'[];
  authorize(req: AuthorizeRequest): Promise<PartnerResult>;
  capture(req: FollowUpRequest): Promise<PartnerResult>;
  refund(req: FollowUpRequest): Promise<PartnerResult>;
  void(req: FollowUpRequest): Promise<PartnerResult>;
  /** The partner's current view of the operation sent with this key; NOT_FOUND means it never arrived. */
  sync(req: SyncRequest): Promise<PartnerResult | 'NOT_FOUND'>;
  /**
   * Optional, for partners that run inside payd (the simulators): the answer to a call
   * when it is a pure function of the request and has no effect outside payd's own
   * records (nothing is held or moved anywhere else). payd then writes the call and its
   * answer in one statement, without the write-ahead PENDING record that guards calls
   * with effects elsewhere: a crash can only lose a decision that changed nothing.
   * undefined: the partner must be called the regular way (authorize, capture, ...).
   */
  answerInline?(call: InlineCall): PartnerResult | undefined;
}

/** A partner that did not answer in time: the outcome is unknown, so the transaction stays PENDING. */
export class PartnerTimeout extends Error {
  override name = 'PartnerTimeout';
}

export class PartnerRegistry {
  private readonly connectors = new Map<string, PartnerConnector>();

  register(connector: PartnerConnector): this {
    this.connectors.set(connector.name, connector);
    return this;
  }

  get(name: string): PartnerConnector | undefined {
    return this.connectors.get(name);
  }

  all(): PartnerConnector[] {
    return [...this.connectors.values()];
  }

  supports(partner: string, method: string): boolean {
    return this.connectors.get(partner)?.methods.includes(method) ?? false;
  }
}
