// The simulated acquirer's ACS (3-D Secure access control server): the page the shopper
// is sent to when card-sim asks for a challenge, where they approve or fail it. It lives
// with the simulator and is registered by it (PartnerConnector.registerRoutes); payd's
// checkout knows nothing of it beyond the redirection URL the partner returned.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { StringEnum, Uuid } from '../../platform/http/schemas.ts';
import { escapeHtml, sendPage } from '../../checkout/pages.ts';
import { formatAmount } from '../../checkout/widget/validation.ts';
import type { SimulatedPartner } from './simulated-partner.ts';

// An ACS page is shown in a frame of the merchant's page (the widget's 3-D Secure modal),
// as the 3-D Secure browser flow does; so is the page that leads back to payd.
const FRAMABLE = { frameAncestors: '*' } as const;

export async function acsRoutes(root: FastifyInstance, sim: SimulatedPartner): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const RefParams = Type.Object({ ref: Uuid() });
  app.get('/sim/acs/:ref', { schema: { hide: true, params: RefParams } }, async (request, reply) => {
    const c = await sim.challenge(request.params.ref);
    if (!c) return sendPage(reply, 404, 'No authentication pending', '<p>There is no card authentication to complete here.</p>');
    if (c.status === 'EXPIRED') return expiredPage(reply, c.return_url);
    if (c.status !== 'CHALLENGE_REQUIRED') {
      // Back (or a reload) after the challenge: it is over; the way onward is the return.
      return sendPage(reply, 200, 'Authentication already finished',
        `<p role="status">This card authentication is already finished.</p>${c.return_url ? `<p><a href="${escapeHtml(c.return_url)}" id="acs-continue">Continue</a></p>` : ''}`,
        [], undefined, [], 'en', FRAMABLE);
    }
    const action = `/sim/acs/${request.params.ref}`;
    return sendPage(reply, 200, 'Confirm your payment', `
<div class="card-box">
<p>Your bank asks you to confirm a payment of <strong>${escapeHtml(formatAmount(c.amount, c.currency))}</strong>.</p>
<p class="muted">payd test bank (simulated 3-D Secure). No code is needed: choose the outcome.</p>
<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="result" value="pass"><button type="submit" id="acs-approve">Approve the payment</button></form>
<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="result" value="fail"><button type="submit" class="secondary" id="acs-fail">Fail authentication</button></form>
</div>`, [], undefined, [], 'en', FRAMABLE);
  });
  app.post('/sim/acs/:ref', {
    schema: { hide: true, params: RefParams, body: Type.Object({ result: StringEnum(['pass', 'fail']) }) },
  }, async (request, reply) => {
    const c = await sim.challenge(request.params.ref);
    if (!c) return sendPage(reply, 404, 'No authentication pending', '<p>There is no card authentication to complete here.</p>');
    const done = await sim.completeChallenge(request.params.ref, request.body.result === 'pass');
    if (done?.partner_status === 'EXPIRED') return expiredPage(reply, c.return_url);
    // A new navigation rather than a redirect of the form post: the way back ends on the
    // merchant's origin, which the page's CSP form-action 'self' would block.
    if (c.return_url) {
      return sendPage(reply, 200, 'Authentication finished',
        `<p role="status">Returning to the payment… <a href="${escapeHtml(c.return_url)}">Continue</a></p>`, [], c.return_url, [], 'en', FRAMABLE);
    }
    return sendPage(reply, 200, 'Authentication finished', '<p role="status">You may close this page.</p>');
  });
}

/**
 * The challenge was cancelled: payd stopped waiting for the shopper (PAYD_CHALLENGE_EXPIRY_SECONDS)
 * and the payment failed. Nothing is completed here; the way onward is the return, where
 * the payment's outcome is told.
 */
function expiredPage(reply: Parameters<typeof sendPage>[0], returnUrl: string | undefined) {
  return sendPage(reply, 200, 'Authentication expired',
    `<p role="status">This card authentication has expired: the payment was not made and nothing was charged.</p>${returnUrl ? `<p><a href="${escapeHtml(returnUrl)}" id="acs-continue">Continue</a></p>` : ''}`,
    [], undefined, [], 'en', FRAMABLE);
}
