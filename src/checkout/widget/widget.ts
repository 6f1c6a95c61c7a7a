/// <reference lib="dom" />
// The payd payment widget: a merchant page loads widget.js and mounts it with the
// session's widget.data. It talks to payd with that session credential only (never the
// merchant's key), checks card details before sending them, and never writes card data
// to a URL, storage or the console. Bundled by esbuild (src/checkout/widget-bundle.ts).
import { cardBrand, cvvValid, expiryValid, formatAmount, groupCardNumber, luhnValid, parseExpiry } from './validation.ts';
import { type Locale, intlLocale, methodLabel, pickLocale, t } from '../i18n.ts';

interface Solution { partner: string; method: string }
interface SessionInfo {
  client_session_id: string;
  status: string;
  locale: Locale;
  merchant: { name: string };
  order: { reference?: string; items: Array<{ name: string; quantity: number }> };
  amount: number;
  currency: string;
  eligible_solutions: Solution[];
  can_pay: boolean;
  attempts_left: number;
  last_attempt_status?: string;
  payment?: { id: string; authorization_status: string };
  return_url: string;
}
interface SubmitResult {
  payment_id: string;
  authorization_status: string;
  can_retry: boolean;
  attempts_left: number;
  redirection?: { url: string };
  return_url: string;
}

interface Problem { title?: string; detail?: string; invalid_params?: Array<{ name: string; reason: string }> }

/** What the shopper reads after an attempt that did not go through. */
function declineMessage(locale: Locale, status: string | undefined, attemptsLeft: number): string {
  return `${t(locale, status === 'ERROR' ? 'failed' : 'declined')} ${t(locale, attemptsLeft === 1 ? 'tryAnotherLast' : 'tryAnother')}`;
}

/** The browser's languages, for what is shown before the session (and its locale) is known. */
const browserLocale = (): Locale => pickLocale(navigator.languages?.join(',') || navigator.language);

export interface MountOptions {
  /** The client session's widget.data. */
  data: string;
  /** payd's base URL; defaults to the origin widget.js was loaded from. */
  baseUrl?: string;
  /** Called instead of navigating when the shopper should go back to the merchant. */
  onComplete?: (returnUrl: string) => void;
}

const scriptOrigin = (() => {
  const src = (document.currentScript as HTMLScriptElement | null)?.src;
  return src ? new URL(src).origin : window.location.origin;
})();

let uid = 0;
const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Array<Node | string>) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v);
  }
  el.append(...children);
  return el;
};

function field(label: string, attrs: Record<string, string>) {
  const id = `payd-${attrs.name}-${++uid}`;
  const input = h('input', { id, ...attrs, 'aria-describedby': `${id}-error` });
  const error = h('p', { id: `${id}-error`, class: 'payd-error', 'aria-live': 'polite' });
  const wrap = h('div', { class: 'payd-field' }, h('label', { for: id, text: label }), input, error);
  const setError = (message: string) => {
    error.textContent = message;
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  };
  return { wrap, input, setError };
}

export async function mount(target: string | Element, options: MountOptions): Promise<void> {
  const root = typeof target === 'string' ? document.querySelector(target) : target;
  if (!root) throw new Error(`payd widget: no element matches ${String(target)}`);
  const base = (options.baseUrl ?? scriptOrigin).replace(/\/$/, '');
  const headers = { 'x-payd-session': options.data, 'content-type': 'application/json' };
  if (!document.querySelector('link[data-payd-style]')) {
    const style = h('link', { rel: 'stylesheet', href: `${base}/checkout/widget.css`, 'data-payd-style': '' });
    document.head.append(style);
  }
  const go = (url: string) => (options.onComplete ? options.onComplete(url) : window.location.assign(url));

  root.replaceChildren(h('p', { class: 'payd-status', role: 'status', text: t(browserLocale(), 'loading') }));
  let info: SessionInfo;
  try {
    const res = await fetch(`${base}/checkout/v1/session`, { headers: { 'x-payd-session': options.data } });
    if (!res.ok) throw new Error(((await res.json().catch(() => ({}))) as Problem).detail ?? `HTTP ${res.status}`);
    info = (await res.json()) as SessionInfo;
  } catch (err) {
    root.replaceChildren(h('p', { class: 'payd-error', role: 'alert', text: `${t(browserLocale(), 'loadFailed')} ${(err as Error).message}` }));
    return;
  }
  const L: Locale = info.locale === 'fr' ? 'fr' : 'en';
  if (!info.can_pay) {
    const what = info.status === 'EXPIRED' ? t(L, 'expired')
      : info.payment?.authorization_status === 'AUTHORIZED' ? t(L, 'alreadyPaid')
        : info.payment?.authorization_status === 'PENDING' ? t(L, 'inProgress')
          : info.status === 'ABORTED_BY_MERCHANT' ? t(L, 'cancelledByMerchant')
            : info.payment ? t(L, 'tooManyAttempts') : t(L, 'closed');
    root.replaceChildren(h('p', { class: 'payd-status', role: 'status', text: what }), h('a', { href: info.return_url, text: t(L, 'returnToMerchant') }));
    return;
  }

  const total = formatAmount(info.amount, info.currency, intlLocale(L));
  const card = info.eligible_solutions.find((s) => s.method === 'CARD');
  const gift = info.eligible_solutions.find((s) => s.method === 'GIFT_CARD');
  const others = info.eligible_solutions.filter((s) => s.method !== 'CARD' && s.method !== 'GIFT_CARD');
  const choices = [...(card ? [card] : []), ...others];
  if (!choices.length) {
    root.replaceChildren(h('p', { class: 'payd-error', role: 'alert', text: t(L, 'noMethod') }));
    return;
  }

  const form = h('form', { class: 'payd-form', novalidate: '', 'aria-label': t(L, 'pay', { total }) });
  // Who asks for the money, and for what.
  if (info.merchant?.name) form.append(h('p', { class: 'payd-merchant', text: t(L, 'paymentTo', { name: info.merchant.name }) }));
  if (info.order?.reference) form.append(h('p', { class: 'payd-order', text: t(L, 'order', { reference: info.order.reference }) }));
  if (info.order?.items?.length) {
    form.append(h('ul', { class: 'payd-items', 'aria-label': t(L, 'items') }, ...info.order.items.map((i) => h('li', { text: i.quantity > 1 ? `${i.name} × ${i.quantity}` : i.name }))));
  }
  form.append(h('p', { class: 'payd-amount', text: t(L, 'amountToPay', { total }) }));
  const methodSet = h('fieldset', {}, h('legend', { text: t(L, 'paymentMethod') }));
  const radios = choices.map((s, i) => {
    const id = `payd-method-${++uid}`;
    const radio = h('input', { type: 'radio', name: 'payd-method', id, value: `${s.partner}|${s.method}` });
    if (i === 0) radio.checked = true;
    methodSet.append(h('div', { class: 'payd-choice' }, radio, h('label', { for: id, text: methodLabel(L, s.method) })));
    return radio;
  });
  if (choices.length > 1) form.append(methodSet);

  const number = field(t(L, 'cardNumber'), { name: 'cardnumber', inputmode: 'numeric', autocomplete: 'cc-number', maxlength: '23', placeholder: '1234 1234 1234 1234' });
  const expiry = field(t(L, 'expiry'), { name: 'exp', inputmode: 'numeric', autocomplete: 'cc-exp', maxlength: '7', placeholder: t(L, 'expiryPlaceholder') });
  const cvv = field(t(L, 'cvv'), { name: 'cvc', inputmode: 'numeric', autocomplete: 'cc-csc', maxlength: '4' });
  const holder = field(t(L, 'holder'), { name: 'ccname', autocomplete: 'cc-name', maxlength: '255' });
  // The number is grouped as typed (as printed on the card) and its brand named.
  const brand = h('p', { class: 'payd-brand', id: `payd-brand-${++uid}`, 'aria-live': 'polite' });
  number.input.setAttribute('aria-describedby', `${number.input.getAttribute('aria-describedby')} ${brand.id}`);
  number.input.after(brand);
  number.input.addEventListener('input', () => {
    const el = number.input;
    const caretDigits = el.value.slice(0, el.selectionStart ?? el.value.length).replace(/\D/g, '').length;
    const digits = el.value.replace(/\D/g, '').slice(0, 19);
    const grouped = groupCardNumber(digits);
    if (grouped !== el.value) {
      el.value = grouped;
      let pos = 0;
      for (let seen = 0; pos < grouped.length && seen < caretDigits; pos++) if (/[0-9]/.test(grouped[pos]!)) seen++;
      if (document.activeElement === el) el.setSelectionRange(pos, pos);
    }
    brand.textContent = cardBrand(digits) ?? '';
  });
  expiry.input.addEventListener('input', (event) => {
    const v = expiry.input.value;
    if ((event as InputEvent).inputType === 'insertText' && /^[0-9]{2}$/.test(v)) expiry.input.value = `${v}/`;
  });
  const expiryAndCvv = h('div', { class: 'payd-row' }, expiry.wrap, cvv.wrap);
  const cardBox = h('div', { class: 'payd-card' }, number.wrap, expiryAndCvv, holder.wrap);
  form.append(cardBox);

  const giftToggle = h('input', { type: 'checkbox', id: `payd-gift-${++uid}` });
  const giftNumber = field(t(L, 'giftNumber'), { name: 'giftcard', inputmode: 'numeric', maxlength: '19' });
  const giftAmount = field(t(L, 'giftAmount', { currency: info.currency }), { name: 'giftamount', inputmode: 'decimal' });
  const giftBox = h('div', { class: 'payd-gift', hidden: '' }, giftNumber.wrap, giftAmount.wrap);
  if (gift && card) {
    form.append(h('div', { class: 'payd-choice' }, giftToggle, h('label', { for: giftToggle.id, text: t(L, 'giftToggle') })), giftBox);
    giftToggle.addEventListener('change', () => { giftBox.hidden = !giftToggle.checked; });
  }

  // A previous attempt of this session that did not go through (e.g. back from a failed 3-D Secure check).
  const formError = h('p', { class: 'payd-error', role: 'alert' });
  if (info.last_attempt_status === 'REFUSED' || info.last_attempt_status === 'ERROR') {
    formError.textContent = declineMessage(L, info.last_attempt_status, info.attempts_left);
  }
  const pay = h('button', { type: 'submit', class: 'payd-pay', text: t(L, 'pay', { total }) });
  const cancel = h('a', { href: info.return_url, class: 'payd-cancel', text: t(L, 'cancel') });
  cancel.addEventListener('click', (event) => {
    if (cancel.getAttribute('aria-disabled') === 'true') event.preventDefault();
  });
  form.append(formError, pay, h('p', {}, cancel));
  root.replaceChildren(form);

  const selected = () => radios.find((r) => r.checked)?.value.split('|') ?? [choices[0]!.partner, choices[0]!.method];
  const syncMethod = () => {
    const isCard = selected()[1] === 'CARD';
    cardBox.hidden = !isCard;
    giftToggle.disabled = !isCard;
  };
  radios.forEach((r) => r.addEventListener('change', syncMethod));
  syncMethod();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    formError.textContent = '';
    const [partner, method] = selected() as [string, string];
    const split: Array<Record<string, unknown>> = [];
    let firstInvalid: HTMLInputElement | undefined;
    const check = (f: ReturnType<typeof field>, message: string) => {
      f.setError(message);
      if (message && !firstInvalid) firstInvalid = f.input;
    };
    let cardAmount = info.amount;
    if (method === 'CARD' && gift && giftToggle.checked) {
      const digits = giftNumber.input.value.replace(/\s+/g, '');
      check(giftNumber, /^[0-9]{12,19}$/.test(digits) ? '' : t(L, 'errGiftDigits'));
      const minor = Math.round(Number(giftAmount.input.value.replace(',', '.')) * 10 ** (info.currency === 'JPY' ? 0 : 2));
      check(giftAmount, Number.isInteger(minor) && minor > 0 && minor < info.amount ? '' : t(L, 'errGiftAmount', { total }));
      cardAmount = info.amount - minor;
      split.push({ partner: gift.partner, method: gift.method, amount: minor, instrument: { type: 'GIFT_CARD', number: digits } });
    }
    if (method === 'CARD') {
      const digits = number.input.value.replace(/[\s-]+/g, '');
      check(number, !/^[0-9]{12,19}$/.test(digits) ? t(L, 'errCardDigits') : luhnValid(digits) ? '' : t(L, 'errCardInvalid'));
      const exp = parseExpiry(expiry.input.value);
      check(expiry, !exp ? t(L, 'errExpiryFormat') : expiryValid(exp) ? '' : t(L, 'errExpired'));
      check(cvv, cvvValid(cvv.input.value, digits) ? '' : t(L, 'errCvv'));
      check(holder, '');
      split.push({
        partner, method, amount: cardAmount,
        instrument: {
          type: 'CARD', number: digits, expiry_month: exp?.month ?? '', expiry_year: exp?.year ?? '', cvv: cvv.input.value.trim(),
          ...(holder.input.value.trim() ? { holder_name: holder.input.value.trim() } : {}),
        },
      });
    } else {
      split.push({ partner, method, amount: info.amount });
    }
    if (firstInvalid) {
      firstInvalid.focus();
      return;
    }
    const busy = (on: boolean) => {
      Array.from(form.querySelectorAll<HTMLInputElement | HTMLButtonElement>('input, button')).forEach((el) => { el.disabled = on; });
      cancel.setAttribute('aria-disabled', String(on));
      cancel.classList.toggle('payd-disabled', on);
      pay.textContent = on ? t(L, 'paying') : t(L, 'pay', { total });
      if (!on) syncMethod();
    };
    busy(true);
    const browser = {
      user_agent: navigator.userAgent.slice(0, 2048), locale: navigator.language, javascript_enabled: true, java_enabled: false,
      color_depth: screen.colorDepth, screen_height: screen.height, screen_width: screen.width, utc_time_zone: -new Date().getTimezoneOffset(),
    };
    try {
      const res = await fetch(`${base}/checkout/v1/session/payments`, { method: 'POST', headers, body: JSON.stringify({ split, browser }) });
      const body = (await res.json().catch(() => ({}))) as Problem & Partial<SubmitResult>;
      if (!res.ok) throw new Error(body.invalid_params?.map((p) => p.reason).join('; ') || body.detail || `HTTP ${res.status}`);
      for (const f of [number, expiry, cvv, giftNumber]) f.input.value = ''; // card data leaves the page
      const status = body.authorization_status;
      if ((status === 'REFUSED' || status === 'ERROR') && body.can_retry) {
        // A decline does not end the checkout: say so here and let the shopper try again.
        busy(false);
        formError.textContent = declineMessage(L, status, body.attempts_left ?? 0);
        (cardBox.hidden ? pay : number.input).focus();
        return;
      }
      go(body.redirection?.url ?? body.return_url ?? info.return_url);
    } catch (err) {
      formError.textContent = `${t(L, 'didNotGoThrough')} ${(err as Error).message}`;
      busy(false);
      pay.focus();
    }
  });
}

declare global {
  interface Window { PaydCheckout: { mount: typeof mount } }
}
window.PaydCheckout = { mount };

/** The session credential in the page address's fragment (#session=...), if any. */
function fragmentCredential(): string | undefined {
  const value = new URLSearchParams(window.location.hash.replace(/^#/, '')).get('session');
  return value || undefined;
}

// Pages that cannot run inline scripts (payd's own pages, strict CSP) mount through
// attributes: <script src=".../widget.js" data-payd-session="..." data-payd-mount="#checkout">,
// or data-payd-session-from="fragment" (the hosted page: the credential is in the
// address's fragment, which the browser never sends to a server).
const self = document.currentScript as HTMLScriptElement | null;
if (self?.dataset.paydMount && (self.dataset.paydSession || self.dataset.paydSessionFrom === 'fragment')) {
  const selector = self.dataset.paydMount;
  const start = () => {
    const data = self.dataset.paydSession ?? fragmentCredential();
    if (data) return void mount(selector, { data });
    const root = document.querySelector(selector);
    root?.replaceChildren(h('p', { class: 'payd-error', role: 'alert', text: t(browserLocale(), 'incompleteAddress') }));
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}
