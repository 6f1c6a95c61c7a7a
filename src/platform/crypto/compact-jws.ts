// Left for src/identity/console/console.routes.ts only, until it reads its token's claims
// with jose's decodeJwt (issue 41): payd's JWTs are signed and verified by jose through
// platform/crypto/jwt.ts. Delete this file when nothing imports it.
export { decodeJwt } from './jwt.ts';
