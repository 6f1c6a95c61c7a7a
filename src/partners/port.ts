// The connector port: what payd asks of a payment partner (acquirer, gift-card
// processor, buy-now-pay-later provider). A connector is a stateless translator
// between these types and the partner's API; persistence and the payment state
// machine belong to the core. An unknown partner status maps to PENDING. The port knows
// no web framework: a partner's inbound notifications reach payd's route (payments/
// partner-webhooks.routes.ts) and the connector only verifies and reads them; pages an
// in-process partner serves are its own (pages.ts). What a payment method means (3-D
// Secure, the email it needs, ...) is methods.ts, not a connector's.

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

/**
 * A card the partner kept (a saved card, docs/decisions.md "Saved cards"): `reference` is
 * the partner's reference of the authorization that saved it. CUSTOMER: the cardholder
 * is present (a customer-initiated payment, with the CVC when given); MERCHANT: a
 * merchant-initiated payment (no cardholder, no CVC, no 3-D Secure).
 */
export interface SavedCardInstrument {
  type: 'SAVED_CARD';
  reference: string;
  initiator: 'CUSTOMER' | 'MERCHANT';
  cvv?: string;
}

export type Instrument = CardInstrument | GiftCardInstrument | SavedCardInstrument | OtherInstrument;

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
  /** payd's saved card this card is (a payment with a SAVED_CARD instrument); partners echo it with the rest. */
  saved_card_id?: string;
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
  /** The merchant entity the payment belongs to (a connector may hold one account per entity). */
  entityId: string;
  /** partner_reference of the authorization this operation draws on. */
  authorization_reference: string;
  amount: number;
  currency: string;
}

export interface SyncRequest {
  key: string;
  entityId: string;
  kind: 'AUTHORIZATION' | 'CAPTURE' | 'REFUND' | 'VOID';
  /** What payd knows of the call, for partners that look it up by its objects rather than by key. */
  context?: {
    /** Captures, refunds and voids: partner_reference of the authorization they draw on. */
    authorization_reference?: string;
    amount: number;
    currency: string;
    /** When payd recorded the call: the partner's record of it is no older. */
    sent_at: Date;
  };
}

/**
 * What a partner's notification (an inbound webhook) says about one of payd's calls: the
 * call's partner key when the partner echoes it, or for a capture the authorization it
 * drew on; and the call's outcome, as the call itself would have answered.
 */
export interface PartnerNotification {
  key?: string;
  kind?: 'AUTHORIZATION' | 'CAPTURE' | 'REFUND' | 'VOID';
  authorization_reference?: string;
  result: PartnerResult;
}

export interface PartnerConnector {
  readonly name: string;
  readonly methods: readonly string[];
  /** Per-partner limits used by eligibility (amount bounds in minor units, currencies). */
  readonly limits: { currencies: readonly string[]; min_amount?: number; max_amount?: number };
  /**
   * Optional: the partner captures an authorization once, and a partial capture releases
   * the rest (Stripe's charges). payd then records that release itself, a SYSTEM void of
   * the rest that has succeeded (no call: payments/outcome.ts, Release), written with the
   * capture's conclusion. Absent: captures as many as the authorization allows.
   */
  readonly capturesOnce?: boolean;
  /**
   * Optional: whether this partner takes payments of this entity (a connector configured
   * with one account per entity and no default). Absent: every entity.
   */
  serves?(entityId: string): boolean;
  authorize(req: AuthorizeRequest): Promise<PartnerResult>;
  capture(req: FollowUpRequest): Promise<PartnerResult>;
  refund(req: FollowUpRequest): Promise<PartnerResult>;
  void(req: FollowUpRequest): Promise<PartnerResult>;
  /** The partner's current view of the operation sent with this key; NOT_FOUND means it never arrived. */
  sync(req: SyncRequest): Promise<PartnerResult | 'NOT_FOUND'>;
  /**
   * Optional: the partner forgets a card it kept (a saved card deleted through the API);
   * `reference` as in SavedCardInstrument. Best effort: payd deletes its saved card whatever this answers.
   */
  forgetCard?(req: { entityId: string; reference: string }): Promise<void>;
  /**
   * Optional: reads a notification the partner posted to POST /partners/{name}/webhooks.
   * rawBody is the bytes received (for the signature). 'UNVERIFIED': not signed by the
   * partner (answered 400, nothing changes). The notifications may repeat: payd applies
   * each at most once (a settled transaction is not settled again).
   */
  notification?(rawBody: string, headers: Record<string, string | string[] | undefined>): Promise<PartnerNotification[] | 'UNVERIFIED'>;
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

  /** Whether the named partner captures an authorization once (capturesOnce); false for one not registered. */
  capturesOnce(name: string): boolean {
    return this.connectors.get(name)?.capturesOnce === true;
  }

  all(): PartnerConnector[] {
    return [...this.connectors.values()];
  }
}
