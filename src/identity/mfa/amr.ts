// How a sign-in was made, as the authentication methods references of RFC 8176 that the
// id_token's `amr` claim carries (docs/identity.md "Second factor"): `pwd` a password,
// `fed` a federated (social) sign-in, `otp` a one-time code (an authenticator app's code
// or a recovery code), `hwk` a device-bound passkey and `swk` a synced one (WebAuthn,
// proof of possession of a key), and `mfa`
// whenever a second factor was passed. Relying parties (the dashboard, the console) ask
// for `mfa` where a second factor is required.
export type FirstFactor = 'pwd' | 'fed' | 'mail';
export type SecondFactor = 'otp' | 'hwk' | 'swk';
export type Amr = FirstFactor | SecondFactor | 'mfa';

/** The methods of a sign-in: its first step, and its second when one was passed. */
export function amrOf(first: FirstFactor, second?: SecondFactor): Amr[] {
  return second ? [first, second, 'mfa'] : [first];
}

/** Whether the methods include a second factor. */
export const hasSecondFactor = (amr: readonly string[] | undefined): boolean => !!amr?.includes('mfa');
