// The identity provider's page toolkit, one import for the routes of login/, mfa/,
// federation/, sdk/ and idp/: LoginPages (login-pages.tsx, account-pages.tsx), the
// layout (layout.tsx) and the cookies (idp-cookies.ts), all on the web layer (src/web).
export { idpCookies, type IdpCookies } from './idp-cookies.ts';
export { type AuthType, type LoginPages, checkMailPage, loginPages, signedOutPage, validatedRequest } from './login-pages.tsx';
export { Alert, Credentials, ENDS_AT_CLIENT, formRefused, refusedPage, sendIdpPage } from './layout.tsx';
