// What the shopper's browser may do, with the session credential (widget.data) and
// never a merchant key: read its session, submit one payment, come back to the merchant
// with a signed service-redirection-data token.
import { problems } from '../platform/http/problem.ts';
import type { ClientSessionsService } from '../payments/client-sessions.service.ts';
import { ClientSessionsService as Sessions } from '../payments/client-sessions.service.ts';
import type { ClientSessionRow } from '../payments/client-sessions.repo.ts';
import type { PaymentsService } from '../payments/payments.service.ts';
import type { CreatePaymentBody } from '../payments/payments.schemas.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import type { RedirectionTokens } from './redirection-token.ts';
import type { Db } from '../platform/db/index.ts';

export interface SubmitBody {
  split: CreatePaymentBody['split'];
  browser?: CreatePaymentBody['browser'];
}

export class CheckoutService {
  constructor(
    private readonly db: Db,
    private readonly sessions: ClientSessionsService,
    private readonly payments: PaymentsService,
    private readonly links: PaymentLinksService,
    private readonly redirection: RedirectionTokens,
    private readonly config: { baseUrl: string },
  ) {}

  /** The session a credential stands for; 401 for a credential payd did not make. */
  async session(data: string | undefined): Promise<ClientSessionRow> {
    const id = data ? this.sessions.verifyWidgetData(data) : undefined;
    if (!id) throw problems.unauthorized('The checkout credential is missing or not valid.', 'PaydSession realm="checkout"');
    const s = await this.sessions.byId(id);
    if (!s) throw problems.unauthorized('The checkout credential is not valid.', 'PaydSession realm="checkout"');
    return s;
  }

  returnUrl(sessionId: string): string {
    return `${this.config.baseUrl}/checkout/return/${sessionId}`;
  }

  /** What the widget shows. */
  async describe(data: string | undefined) {
    const s = await this.session(data);
    const payment = s.payment_id ? await this.payments.getStored(s.entity_id, s.payment_id) : undefined;
    return {
      client_session_id: s.id,
      status: Sessions.effectiveStatus(s),
      amount: s.amount,
      currency: s.currency,
      expires_at: s.expires_at,
      eligible_solutions: s.eligible_solutions,
      ...(payment ? { payment: { id: payment.id, authorization_status: payment.authorization.status } } : {}),
      return_url: this.returnUrl(s.id),
    };
  }

  /** Submits the shopper's payment: the session moves to SUBMITTED and the payment is created. */
  async submit(data: string | undefined, body: SubmitBody) {
    const s = await this.session(data);
    const status = Sessions.effectiveStatus(s);
    if (status !== 'CREATED' || s.payment_id) {
      throw problems.unprocessable('client-session-status', 'Session already used',
        `The client session is ${status === 'CREATED' ? 'SUBMITTED' : status} and takes no further payment.`);
    }
    body.split.forEach((part, i) => {
      if (!s.eligible_solutions.some((e) => e.partner === part.partner && e.method === part.method)) {
        throw problems.invalidField(`split[${i}]`, `${part.partner}/${part.method} is not an eligible solution of this session`);
      }
    });
    if (s.payment_link_id) await this.db.transaction((tx) => this.links.claimAttempt(tx, s));
    let payment;
    try {
      payment = await this.payments.create(s.entity_id, {
        amount: s.amount,
        currency: s.currency as CreatePaymentBody['currency'],
        capture_mode: s.capture_mode as 'MANUAL' | 'AUTOMATIC',
        allow_future_usage: s.allow_future_usage,
        client_session_id: s.id,
        ...(s.order ? { order: s.order as never } : {}),
        ...(s.customer ? { customer: s.customer as never } : {}),
        ...(body.browser ? { browser: body.browser } : {}),
        ...(s.three_ds_authentication_options ? { three_ds_authentication_options: s.three_ds_authentication_options as never } : {}),
        split: body.split,
      }, `checkout:${s.id}`, `/checkout/v1/session/payments`);
    } catch (err) {
      if (s.payment_link_id) await this.links.releaseAttempt(s.id, s.payment_link_id);
      throw err;
    }
    await this.links.attemptOutcome(s, payment.id, payment.authorization.status);
    const redirection = payment.authorization.status === 'PENDING' ? payment.authorization.redirection : undefined;
    return {
      payment_id: payment.id,
      authorization_status: payment.authorization.status,
      ...(redirection ? { redirection } : {}),
      return_url: this.returnUrl(s.id),
    };
  }

  /**
   * Where the shopper goes back to: the merchant's shopper_redirection_url with the signed
   * token, after settling the payment with its partners. undefined: the session has no
   * redirection URL (the page then shows the outcome itself).
   */
  async finish(sessionId: string): Promise<{ url?: string; session: ClientSessionRow; authorizationStatus: string | null }> {
    const s = await this.sessions.byId(sessionId);
    if (!s) throw problems.notFound('No such client session.');
    let authorizationStatus: string | null = null;
    if (s.payment_id) {
      const payment = await this.payments.get(s.entity_id, s.payment_id);
      authorizationStatus = payment.authorization.status;
      await this.links.attemptOutcome(s, payment.id, authorizationStatus);
    }
    const fresh = (await this.sessions.byId(sessionId))!;
    if (!fresh.shopper_redirection_url) return { session: fresh, authorizationStatus };
    const token = await this.redirection.sign(fresh.entity_id, {
      client_session_id: fresh.id,
      payment_id: fresh.payment_id,
      authorization_status: authorizationStatus,
      client_session_status: Sessions.effectiveStatus(fresh),
    });
    const url = new URL(fresh.shopper_redirection_url);
    url.searchParams.append('service-redirection-data', token);
    return { url: url.toString(), session: fresh, authorizationStatus };
  }

  /** After the 3-D Secure page: the payment's session return, when it has one. */
  async afterChallenge(paymentId: string): Promise<{ sessionId?: string; authorizationStatus?: string }> {
    const p = await this.payments.findById(paymentId);
    if (!p) return {};
    const view = await this.payments.get(p.entity_id, p.id);
    return { ...(p.client_session_id ? { sessionId: p.client_session_id } : {}), authorizationStatus: view.authorization.status };
  }
}
