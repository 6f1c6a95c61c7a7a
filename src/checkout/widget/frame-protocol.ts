// The messages between the widget (on the merchant's page) and the card frame (payd's
// origin, /checkout/card-frame). Card data never crosses: the frame sends the payment to
// payd itself and tells the widget only the outcome and events (brand, empty, complete).
// Every message is checked on arrival: the sender's window and origin, then its type.

import type { Locale } from '../../web/i18n.ts';

/** Styling options a merchant passes at mount, applied inside the frame as CSS variables. */
export interface FieldStyle {
  fontFamily?: string;
  fontSize?: string;
  color?: string;
  labelColor?: string;
  background?: string;
  borderColor?: string;
  borderRadius?: string;
  focusColor?: string;
  errorColor?: string;
}

export const STYLE_KEYS: ReadonlyArray<keyof FieldStyle> = ['fontFamily', 'fontSize', 'color', 'labelColor', 'background', 'borderColor', 'borderRadius', 'focusColor', 'errorColor'];

/**
 * The CSS variables of a style: only known keys, short values without url(), braces,
 * semicolons, angle brackets or backslashes (a value cannot load anything or escape its
 * property). Anything else is left out.
 */
export function styleVariables(style: unknown): Array<[string, string]> {
  if (!style || typeof style !== 'object') return [];
  const out: Array<[string, string]> = [];
  for (const key of STYLE_KEYS) {
    const v = (style as Record<string, unknown>)[key];
    if (typeof v !== 'string' || !v || v.length > 120 || /url\(|[{};<>\\]|@import|expression/i.test(v)) continue;
    out.push([`--payd-${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, v]);
  }
  return out;
}

export interface CardState {
  /** The brand the number's first digits show, or '' while unknown. */
  brand: string;
  /** Every card field is empty. */
  empty: boolean;
  /** Each field holds a complete, valid value. */
  complete: { number: boolean; expiry: boolean; cvc: boolean };
}

/** Widget -> frame. */
export type ToFrame =
  | { type: 'payd:init'; locale: Locale; credential: string; style?: FieldStyle }
  | { type: 'payd:submit'; id: number; split: Array<Record<string, unknown>>; cardIndex: number; browser?: Record<string, unknown>; customer_email?: string; dryRun?: boolean;
    /** Pay with this saved card of the session's customer: the frame asks only its CVC. */
    savedCardId?: string }
  /** A saved card is chosen (the frame shows only the CVC field), or a new card (every field). */
  | { type: 'payd:saved'; on: boolean }
  | { type: 'payd:busy'; on: boolean }
  | { type: 'payd:focus' }
  | { type: 'payd:clear' };

/** Frame -> widget. */
export type FromFrame =
  | { type: 'payd:ready' }
  | { type: 'payd:resize'; height: number }
  | { type: 'payd:change'; state: CardState }
  | { type: 'payd:enter' }
  | { type: 'payd:invalid'; id: number }
  | { type: 'payd:valid'; id: number }
  | { type: 'payd:result'; id: number; status: number; body: Record<string, unknown> }
  | { type: 'payd:error'; id: number; message: string };

/** What payd's 3-D Secure return page posts to the widget from the modal frame (no data: the widget asks payd). */
export const THREE_DS_DONE = 'payd:3ds-done';

/**
 * The session id a widget credential stands for (the credential is base64url of
 * "<session id>.<MAC>"): the card frame's address names it (?s=), so that payd says who
 * may embed the frame (the merchant's checkout origins), and the frame takes only that
 * session's credential. The id is no credential; the MAC never goes in an address.
 */
export function sessionIdOf(credential: string): string {
  try {
    return atob(credential.replace(/-/g, '+').replace(/_/g, '/')).split('.')[0] ?? '';
  } catch {
    return '';
  }
}
