// Passkeys on the security page (WebAuthn, passkeys.ts): added (the password again and a
// name, then the browser's answer to a challenge bound to the user, made by PASSKEY_SCRIPT
// from the form's options), and removed. Pages in mfa-pages.tsx.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Mfa } from './mfa.ts';
import { PASSKEYS, PasskeyRefused, type Passkeys, parseCredential } from './passkeys.ts';
import { ACCOUNT_SECURITY, Done, PasskeyEnrol } from './mfa-pages.tsx';
import { type AccountSecurity, passkeyName } from './account-security.ts';
import type { LoginPages } from '../login/pages.ts';

const FormBody = Type.Record(Type.String(), Type.String({ maxLength: 2048 }));
/** A form that carries a passkey's answer (`credential`, a JSON text longer than other fields). */
const PasskeyFormBody = Type.Object({ credential: Type.Optional(Type.String({ maxLength: 16384 })) }, { additionalProperties: Type.String({ maxLength: 2048 }) });

export async function securityPasskeyRoutes(app: FastifyInstance, { pages, mfa, passkeys, account }: { pages: LoginPages; mfa: Mfa; passkeys: Passkeys; account: AccountSecurity }) {
  app.post(`${ACCOUNT_SECURITY}/passkeys/start`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const named = passkeyName(body.name);
    const s = await account.signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    if ('error' in named) return account.page(request, reply, s.user, { message: named.error, status: 400 });
    if ((await passkeys.list(s.user.id)).length >= PASSKEYS.maxPerUser) {
      return account.page(request, reply, s.user, { message: `You have ${PASSKEYS.maxPerUser} passkeys: remove one first.`, status: 409 });
    }
    const options = await passkeys.registrationOptions(s.user);
    return account.page(request, reply, s.user, { extra: PasskeyEnrol({ name: named.name, options, fields: () => pages.fields(request, reply) }), passkeyScript: true });
  });

  app.post(`${ACCOUNT_SECURITY}/passkeys/finish`, { schema: { hide: true, body: PasskeyFormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await account.signedIn(request, reply, body, false); // the password was asked when the challenge was made (bound to this user, 5 minutes)
    if (!s.user) return s.reply;
    const named = passkeyName(body.name);
    if ('error' in named) return account.page(request, reply, s.user, { message: named.error, status: 400 });
    let added;
    try {
      added = await passkeys.register(s.user.id, named.name, parseCredential(body.credential));
    } catch (err) {
      if (err instanceof PasskeyRefused) return account.page(request, reply, s.user, { message: err.message, status: 400 });
      throw err;
    }
    // A first factor's recovery codes (none unused yet): shown once, as after an authenticator app.
    const codes = (await mfa.recoveryLeft(s.user.id)) === 0 ? await mfa.newRecoveryCodes(s.user.id) : undefined;
    return account.page(request, reply, s.user, { extra: Done({ message: `The passkey ${added.name} is added.`, codes }) });
  });

  app.post(`${ACCOUNT_SECURITY}/passkeys/remove`, { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const body = request.body as Record<string, string>;
    const s = await account.signedIn(request, reply, body, true);
    if (!s.user) return s.reply;
    const kept = await account.lastFactorKept(s.user.id);
    if (kept) return account.page(request, reply, s.user, { message: `The passkey stays: ${kept}`, status: 409 });
    if (!(await passkeys.remove(s.user.id, body.id ?? ''))) return account.page(request, reply, s.user, { message: 'id: that passkey is not one of yours (already removed?).', status: 404 });
    await mfa.dropRecoveryIfNoFactor(s.user.id);
    return account.page(request, reply, s.user, { extra: Done({ message: 'The passkey is removed.' }) });
  });
}
