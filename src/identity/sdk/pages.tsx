// The hosted pages of the identity SDK's flows (password reset, sign-up confirmation, the
// SDK's sign-out): the identity provider's pages (login/layout.tsx), no script.
import type { FastifyReply } from 'fastify';
import { sendIdpPage } from '../login/layout.tsx';

/** A page of the SDK's flows: the identity provider's page (login/layout.tsx). */
export const identityPage = sendIdpPage;

/** The page of a mailed link that was used or has expired. */
export const linkExpired = (reply: FastifyReply, what: string): FastifyReply =>
  identityPage(reply, 400, 'This link does not work any more', <p role="alert">The link has expired or was already used. {what}</p>);
