// The simulated acquirer's ACS (3-D Secure access control server): the page the shopper
// is sent to when card-sim asks for a challenge, where they approve or fail it. It lives
// with the simulator and is registered by it (PartnerConnector.registerRoutes); payd's
// checkout knows nothing of it beyond the redirection URL the partner returned.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { StringEnum, Uuid } from '../../platform/http/schemas.ts';
import { langQuery, pageLanguage } from '../../web/index.ts';
import type { SimulatedPartner } from './simulated-partner.ts';
import { sendAnswered, sendChallenge, sendDone, sendExpired, sendNothing } from './acs-pages.tsx';

// The pages speak the cardholder's language as payd's own do (src/web/language.ts):
// the shopper's choice on payd's pages, else the payment's customer.locale (which the
// simulated issuer keeps with the challenge), else the browser's. A choice given in the
// address (?lang=: the widget's locale option, in its 3-D Secure modal) goes on to the
// return address: in a frame of another site the payd_lang cookie is neither kept nor sent.
const onward = (request: FastifyRequest, returnUrl: string | undefined): string | undefined => {
  const lang = new URLSearchParams(langQuery(request)).get('lang');
  if (!returnUrl || !lang) return returnUrl;
  const url = new URL(returnUrl);
  url.searchParams.set('lang', lang);
  return url.toString();
};

export async function acsRoutes(root: FastifyInstance, sim: SimulatedPartner): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const RefParams = Type.Object({ ref: Uuid() });
  app.get('/sim/acs/:ref', { schema: { hide: true, params: RefParams } }, async (request, reply) => {
    const c = await sim.challenge(request.params.ref);
    if (!c) return sendNothing(reply, pageLanguage(request, reply));
    const lang = pageLanguage(request, reply, c.locale);
    if (c.status === 'EXPIRED') return sendExpired(reply, lang, onward(request, c.return_url));
    if (c.status !== 'CHALLENGE_REQUIRED') return sendDone(reply, lang, onward(request, c.return_url));
    return sendChallenge(reply, lang, c, `/sim/acs/${request.params.ref}${langQuery(request)}`);
  });
  app.post('/sim/acs/:ref', {
    schema: { hide: true, params: RefParams, body: Type.Object({ result: StringEnum(['pass', 'fail']) }) },
  }, async (request, reply) => {
    const c = await sim.challenge(request.params.ref);
    if (!c) return sendNothing(reply, pageLanguage(request, reply));
    const lang = pageLanguage(request, reply, c.locale);
    const done = await sim.completeChallenge(request.params.ref, request.body.result === 'pass');
    if (done?.partner_status === 'EXPIRED') return sendExpired(reply, lang, onward(request, c.return_url));
    return sendAnswered(reply, lang, onward(request, c.return_url));
  });
}
