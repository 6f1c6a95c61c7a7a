/// <reference lib="dom" />
// The payd payment widget: a merchant page loads widget.js and mounts it with the
// session's widget.data. It talks to payd with that session credential only (never the
// merchant's key). Card data never touches the merchant's page: the card number, expiry,
// CVC and name are in a frame served by payd (/checkout/card-frame, card-frame.ts),
// which sends the payment to payd itself; the widget sends it the rest of the payment
// (the split, a gift card, the browser, an email) and hears back events and the outcome,
// never a card value. A 3-D Secure challenge opens in a modal frame on the page, and its
// outcome comes back to the widget. Bundled by esbuild (src/checkout/widget-bundle.ts).
import { formatAmount, minorOf } from '../../money/currency.ts';
import { methodMeaning } from '../../partners/methods.ts';
import { type Locale, hasMessage, intlLocale, localeOf, methodLabel, pickLocale, t } from '../../web/i18n.ts';
import { type Field, field, h, nextId, regroup } from './dom.ts';
import { type CardState, type FieldStyle, type FromFrame, type ToFrame, THREE_DS_DONE, sessionIdOf, styleVariables } from './frame-protocol.ts';

interface Solution { partner: string; method: string; requires?: string[] }
interface SavedCard { id: string; partner: string; selected_network: string; last_four_digits: string; expiry_month: string; expiry_year: string }
interface SessionInfo {
  client_session_id: string;
  status: string;
  locale: Locale;
  merchant: { name: string };
  order: { reference?: string; items: Array<{ name: string; quantity: number }> };
  amount: number;
  currency: string;
  eligible_solutions: Solution[];
  /** The session customer's saved cards (no number: brand, last four, expiry). */
  saved_cards?: SavedCard[];
  can_pay: boolean;
  attempts_left: number;
  last_attempt_status?: string;
  payment?: { id: string; authorization_status: string };
  return_url: string;
}
interface SubmitResult {
  payment_id: string;
  authorization_status: string;
  /** Why the issuer declined, when payd knows (expired_card, incorrect_cvc, insufficient_funds). */
  decline_reason?: string;
  can_retry: boolean;
  attempts_left: number;
  redirection?: { url: string };
  return_url: string;
}

interface Problem { title?: string; detail?: string; invalid_params?: Array<{ name: string; reason: string }> }

/** What the shopper reads after an attempt that did not go through: the reason when payd gives one. */
function declineMessage(locale: Locale, status: string | undefined, attemptsLeft: number, reason?: string): string {
  const key = `decline_${reason}`;
  const what = status === 'ERROR' ? t(locale, 'failed') : reason && hasMessage(key) ? t(locale, key) : t(locale, 'declined');
  return `${what} ${t(locale, attemptsLeft === 1 ? 'tryAnotherLast' : 'tryAnother')}`;
}

/** The shopper's choice or the browser's languages, for what is shown before the session (and its locale) is known. */
const browserLocale = (chosen?: string): Locale => pickLocale(navigator.languages?.join(',') || navigator.language, undefined, chosen);

export interface MountOptions {
  /** The client session's widget.data. */
  data: string;
  /** payd's base URL; defaults to the origin widget.js was loaded from. */
  baseUrl?: string;
  /** Called instead of navigating when the shopper should go back to the merchant. */
  onComplete?: (returnUrl: string) => void;
  /** Called when the card fields change: the brand, whether they are empty or complete; never a value. */
  onChange?: (state: CardState) => void;
  /** The look of the fields, inside the card frame as on the page (see docs/checkout.md). */
  style?: FieldStyle;
  /** 3-D Secure: in a modal frame on the page (default), or by leaving the page for the bank's. */
  threeDs?: 'modal' | 'redirect';
  /** The shopper's own choice of language (a language tag, e.g. from your page's switch): wins over the session's customer.locale and the browser's. */
  locale?: string;
  /** Called once when the widget is shown and its card fields (when it offers a card) can be typed in. */
  onReady?: () => void;
}

const scriptOrigin = (() => {
  const src = (document.currentScript as HTMLScriptElement | null)?.src;
  return src ? new URL(src).origin : window.location.origin;
})();

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const groupsOf4 = (digits: string) => digits.replace(/(\d{4})(?=\d)/g, '$1 ');

export async function mount(target: string | Element, options: MountOptions): Promise<void> {
  const root = typeof target === 'string' ? document.querySelector(target) : target;
  if (!root) throw new Error(`payd widget: no element matches ${String(target)}`);
  const base = (options.baseUrl ?? scriptOrigin).replace(/\/$/, '');
  const paydOrigin = new URL(base, window.location.href).origin;
  const headers = { 'x-payd-session': options.data, 'content-type': 'application/json' };
  if (!document.querySelector('link[data-payd-style]')) {
    const style = h('link', { rel: 'stylesheet', href: `${base}/checkout/widget.css`, 'data-payd-style': '' });
    document.head.append(style);
  }
  for (const [name, value] of styleVariables(options.style)) (root as HTMLElement).style?.setProperty(name, value);
  const go = (url: string) => (options.onComplete ? options.onComplete(url) : window.location.assign(url));

  const status = h('p', { class: 'payd-status', role: 'status', text: t(browserLocale(options.locale), 'loading') });
  // The card fields: a frame of payd's origin, requested now, while the session is read
  // (it needs nothing of the session but its id), and kept hidden until the session says
  // a card form is shown. It gets the credential only then (payd:init), and is never moved
  // in the page (a moved iframe loads again): the form is built around it. Its address's
  // fragment names this page's origin, the only one it talks to; its height follows its content.
  // payd writes the frame's fields at once, in the language it decides as for the session
  // read (the locale option goes with both) and in the style given here (in the fragment).
  const frameQuery = new URLSearchParams({ s: sessionIdOf(options.data), ...(options.locale ? { lang: options.locale } : {}) });
  const frameFragment = new URLSearchParams({ origin: window.location.origin, ...(options.style ? { style: JSON.stringify(options.style) } : {}) });
  const frame = h('iframe', {
    src: `${base}/checkout/card-frame?${frameQuery.toString()}#${frameFragment.toString()}`,
    title: t(browserLocale(options.locale), 'cardDetails'), class: 'payd-frame', scrolling: 'no', allow: 'payment',
  });
  const cardBox = h('div', { class: 'payd-card' }, frame);
  // Until the session is read the form is laid out but unseen and out of reach (transparent,
  // inert: no focus, nothing for assistive technologies), so that the frame lays out and
  // paints its fields meanwhile rather than after the form is shown (a frame not displayed
  // is not rendered). Set by the CSSOM, which a page's CSP without 'unsafe-inline' allows.
  const form = h('form', { class: 'payd-form', novalidate: '', inert: '' }, cardBox);
  form.style.opacity = '0';
  root.replaceChildren(status, form);
  // Messages from payd's origin: the frame's payd:ready may come before the session is
  // read; everything else is handled once the form is built (later.message below).
  let frameUp = false;
  const later: { ready?: () => void; message?: (event: MessageEvent, m: FromFrame | { type: typeof THREE_DS_DONE }) => void } = {};
  window.addEventListener('message', (event: MessageEvent) => {
    if (event.origin !== paydOrigin) return;
    const m = event.data as FromFrame | { type: typeof THREE_DS_DONE };
    if (!m || typeof m !== 'object') return;
    if (event.source === frame.contentWindow && m.type === 'payd:ready') {
      frameUp = true;
      later.ready?.();
    } else later.message?.(event, m);
  });
  const lang = options.locale ? `?lang=${encodeURIComponent(options.locale)}` : '';
  const loadSession = async (): Promise<SessionInfo> => {
    const res = await fetch(`${base}/checkout/v1/session${lang}`, { headers: { 'x-payd-session': options.data } })
      .catch(() => { throw new Error(t(browserLocale(options.locale), 'networkError')); });
    if (!res.ok) throw new Error(((await res.json().catch(() => ({}))) as Problem).detail ?? `HTTP ${res.status}`);
    return (await res.json()) as SessionInfo;
  };
  let info: SessionInfo;
  try {
    info = await loadSession();
  } catch (err) {
    root.replaceChildren(h('p', { class: 'payd-error', role: 'alert', text: `${t(browserLocale(options.locale), 'loadFailed')} ${(err as Error).message}` }));
    return;
  }
  const L: Locale = localeOf(info.locale) ?? 'en';
  root.setAttribute('lang', L); // the widget's language, which may not be the page's
  /** A session that takes no further payment: why, and the way back to the merchant. */
  const showClosed = (s: SessionInfo) => {
    const what = s.status === 'EXPIRED' ? t(L, 'expired')
      : s.payment?.authorization_status === 'AUTHORIZED' ? t(L, 'alreadyPaid')
        : s.payment?.authorization_status === 'PENDING' ? t(L, 'inProgress')
          : s.status === 'ABORTED_BY_MERCHANT' ? t(L, 'cancelledByMerchant')
            : s.payment ? t(L, 'tooManyAttempts') : t(L, 'closed');
    root.replaceChildren(h('p', { class: 'payd-status', role: 'status', text: what }), h('a', { href: s.return_url, text: t(L, 'returnToMerchant') }));
  };
  if (!info.can_pay) return showClosed(info);

  const total = formatAmount(info.amount, info.currency, intlLocale(L));
  // What each method means (which instrument the shopper gives) is partners/methods.ts's.
  const instrumentOf = (s: Solution) => methodMeaning(s.method).instrument;
  const card = info.eligible_solutions.find((s) => instrumentOf(s) === 'CARD');
  const gift = info.eligible_solutions.find((s) => instrumentOf(s) === 'GIFT_CARD');
  const others = info.eligible_solutions.filter((s) => instrumentOf(s) === undefined);
  const choices = [...(card ? [card] : []), ...others];
  if (!choices.length) {
    root.replaceChildren(h('p', { class: 'payd-error', role: 'alert', text: t(L, 'noMethod') }));
    return;
  }

  form.setAttribute('aria-label', t(L, 'pay', { total }));
  frame.title = t(L, 'cardDetails');
  // What goes before the card fields is put before them (the frame stays where it is).
  const before = (...nodes: Node[]) => cardBox.before(...nodes);
  // Who asks for the money, and for what.
  if (info.merchant?.name) before(h('p', { class: 'payd-merchant', text: t(L, 'paymentTo', { name: info.merchant.name }) }));
  if (info.order?.reference) before(h('p', { class: 'payd-order', text: t(L, 'order', { reference: info.order.reference }) }));
  if (info.order?.items?.length) {
    before(h('ul', { class: 'payd-items', 'aria-label': t(L, 'items') }, ...info.order.items.map((i) => h('li', { text: i.quantity > 1 ? `${i.name} × ${i.quantity}` : i.name }))));
  }
  before(h('p', { class: 'payd-amount', text: t(L, 'amountToPay', { total }) }));
  const methodSet = h('fieldset', {}, h('legend', { text: t(L, 'paymentMethod') }));
  const radios = choices.map((s, i) => {
    const id = nextId('payd-method');
    const radio = h('input', { type: 'radio', name: 'payd-method', id, value: String(i) });
    if (i === 0) radio.checked = true;
    methodSet.append(h('div', { class: 'payd-choice' }, radio, h('label', { for: id, text: methodLabel(L, s.method) })));
    return radio;
  });
  if (choices.length > 1) before(methodSet);

  let frameReady!: () => void;
  const ready = new Promise<void>((resolve) => { frameReady = resolve; });
  const toFrame = (m: ToFrame) => frame.contentWindow?.postMessage(m, paydOrigin);
  const pending = new Map<number, (m: FromFrame) => void>();
  let seq = 0;
  const ask = (m: Omit<Extract<ToFrame, { type: 'payd:submit' }>, 'id'>) => new Promise<FromFrame>((resolve) => {
    const id = ++seq;
    pending.set(id, resolve);
    toFrame({ ...m, id });
  });
  if (!card) cardBox.remove();

  // The customer's saved cards (the merchant named the customer in the session): one is
  // chosen by default and the card frame then asks only its CVC; "A new card" shows
  // every card field again. The frame sends the payment, CVC included, as for a new card.
  const savedCards = card ? info.saved_cards ?? [] : [];
  const savedSet = h('fieldset', { class: 'payd-saved' }, h('legend', { text: t(L, 'savedCards') }));
  const savedRadios = [...savedCards.map((c) => ({ card: c as SavedCard | undefined, label: t(L, 'savedCard', {
    brand: c.selected_network, last4: c.last_four_digits, month: c.expiry_month, year: c.expiry_year,
  }) })), { card: undefined, label: t(L, 'newCard') }].map((choice, i) => {
    const id = nextId('payd-saved');
    const radio = h('input', { type: 'radio', name: 'payd-saved', id, value: String(i) });
    if (i === 0) radio.checked = true;
    savedSet.append(h('div', { class: 'payd-choice' }, radio, h('label', { for: id, text: choice.label })));
    return { radio, card: choice.card };
  });
  if (savedCards.length) cardBox.prepend(savedSet);
  const savedChosen = () => savedRadios.find((r) => r.radio.checked)?.card;
  const syncSaved = () => toFrame({ type: 'payd:saved', on: savedChosen() !== undefined });
  savedRadios.forEach((r) => r.radio.addEventListener('change', syncSaved));

  // The shopper's email, asked when the chosen method needs it and the merchant did not give it.
  const email = field(t(L, 'email'), { name: 'email', type: 'email', autocomplete: 'email', maxlength: '254' }, () => (EMAIL.test(email.input.value.trim()) ? '' : t(L, 'errEmail')));
  const emailHint = h('p', { class: 'payd-hint', id: nextId('payd-email-hint'), text: t(L, 'emailHint') });
  email.input.setAttribute('aria-describedby', `${email.input.getAttribute('aria-describedby')} ${emailHint.id}`);
  email.input.after(emailHint);
  if (choices.some((s) => s.requires?.includes('customer_email'))) form.append(email.wrap);

  const giftToggle = h('input', { type: 'checkbox', id: nextId('payd-gift') });
  const giftNumber = field(t(L, 'giftNumber'), { name: 'giftcard', inputmode: 'numeric', autocomplete: 'off', maxlength: '23' },
    () => (/^[0-9]{12,19}$/.test(giftNumber.input.value.replace(/[\s-]+/g, '')) ? '' : t(L, 'errGiftDigits')));
  giftNumber.input.addEventListener('input', () => regroup(giftNumber.input, groupsOf4, 19));
  const giftMinor = () => minorOf(giftAmount.input.value, info.currency) ?? Number.NaN; // (money/currency.ts: the one table of minor units)
  const giftAmount = field(t(L, 'giftAmount', { currency: info.currency }), { name: 'giftamount', inputmode: 'decimal' }, () => {
    const minor = giftMinor();
    return giftAmount.input.value.trim() && Number.isInteger(minor) && minor > 0 && minor < info.amount ? '' : t(L, 'errGiftAmount', { total });
  });
  const giftBox = h('div', { class: 'payd-gift', hidden: '' }, giftNumber.wrap, giftAmount.wrap);
  if (gift && card) {
    form.append(h('div', { class: 'payd-choice' }, giftToggle, h('label', { for: giftToggle.id, text: t(L, 'giftToggle') })), giftBox);
    giftToggle.addEventListener('change', () => { giftBox.hidden = !giftToggle.checked; });
  }

  // A previous attempt of this session that did not go through (e.g. back from a failed 3-D Secure check).
  const formError = h('p', { class: 'payd-error', role: 'alert' });
  const showPrevious = (s: SessionInfo) => {
    if (s.last_attempt_status === 'REFUSED' || s.last_attempt_status === 'ERROR') formError.textContent = declineMessage(L, s.last_attempt_status, s.attempts_left);
  };
  showPrevious(info);
  const pay = h('button', { type: 'submit', class: 'payd-pay', text: t(L, 'pay', { total }) });
  const cancel = h('a', { href: info.return_url, class: 'payd-cancel', text: t(L, 'cancel') });
  cancel.addEventListener('click', (event) => {
    if (cancel.getAttribute('aria-disabled') === 'true') event.preventDefault();
  });
  form.append(formError, pay, h('p', {}, cancel));
  status.remove();
  form.removeAttribute('inert');
  form.style.removeProperty('opacity');

  const selected = () => choices[Number(radios.find((r) => r.checked)?.value ?? 0)]!;
  const syncMethod = () => {
    const s = selected();
    const isCard = instrumentOf(s) === 'CARD';
    cardBox.hidden = !isCard;
    giftToggle.disabled = !isCard;
    email.wrap.hidden = !s.requires?.includes('customer_email');
  };
  radios.forEach((r) => r.addEventListener('change', syncMethod));
  syncMethod();

  const busy = (on: boolean) => {
    Array.from(form.querySelectorAll<HTMLInputElement | HTMLButtonElement>('input, button')).forEach((el) => { el.disabled = on; });
    toFrame({ type: 'payd:busy', on });
    cancel.setAttribute('aria-disabled', String(on));
    cancel.classList.toggle('payd-disabled', on);
    pay.textContent = on ? t(L, 'paying') : t(L, 'pay', { total });
    if (!on) syncMethod();
  };
  /** After an attempt that did not go through and may be retried: say so here, take another card. */
  const retry = (status: string | undefined, attemptsLeft: number, reason?: string) => {
    busy(false);
    formError.textContent = declineMessage(L, status, attemptsLeft, reason);
    if (cardBox.hidden) pay.focus();
    else {
      frame.focus();
      toFrame({ type: 'payd:focus' });
    }
  };

  // 3-D Secure in a modal frame: payd's return page in it tells the widget the challenge
  // is over (nothing more); the widget then asks payd how it went.
  let challenge: { dialog: HTMLDialogElement; frame: HTMLIFrameElement } | undefined;
  const afterChallenge = async () => {
    const done = challenge;
    challenge = undefined;
    done?.dialog.close();
    done?.dialog.remove();
    let now: SessionInfo;
    try {
      now = await loadSession();
    } catch (err) {
      formError.textContent = `${t(L, 'didNotGoThrough')} ${(err as Error).message}`;
      return busy(false);
    }
    const status = now.payment?.authorization_status;
    if ((status === 'REFUSED' || status === 'ERROR') && now.can_pay) return retry(status, now.attempts_left);
    go(info.return_url);
  };
  const openChallenge = (url: string) => {
    const dialog = h('dialog', { class: 'payd-3ds', 'aria-label': t(L, 'threeDsTitle') });
    // payd's own challenge page (the simulated bank's, then the 3ds-done page) takes the
    // locale option as the card frame does (?lang=); a bank's address is left as given.
    const at = new URL(url, window.location.href);
    if (options.locale && at.origin === paydOrigin) at.searchParams.set('lang', options.locale);
    const f = h('iframe', { src: at.href, title: t(L, 'threeDsTitle'), class: 'payd-3ds-frame' });
    dialog.append(h('p', { class: 'payd-3ds-title', text: t(L, 'threeDsTitle') }), f);
    // The bank's page decides the outcome; Escape does not leave a payment half done
    // (should the browser close the dialog anyway, it opens again while the challenge lasts).
    dialog.addEventListener('cancel', (event) => event.preventDefault());
    dialog.addEventListener('close', () => { if (challenge?.dialog === dialog) dialog.showModal(); });
    document.body.append(dialog);
    dialog.showModal();
    challenge = { dialog, frame: f };
    pay.textContent = t(L, 'checking');
  };

  // The widget is ready once shown with its card fields (the frame writes them before it says payd:ready).
  let readySaid = false;
  const sayReady = () => {
    if (readySaid) return;
    readySaid = true;
    options.onReady?.();
  };
  // The frame is up (now or later, or again after a reload): it gets the session's credential, language and style.
  later.ready = () => {
    toFrame({ type: 'payd:init', locale: L, credential: options.data, ...(options.style ? { style: options.style } : {}) });
    if (savedCards.length) syncSaved();
    frameReady();
    sayReady();
  };
  later.message = (event, m) => {
    if (challenge && event.source === challenge.frame.contentWindow) {
      if (m.type === THREE_DS_DONE) void afterChallenge();
      return;
    }
    if (event.source !== frame.contentWindow) return;
    if (m.type === 'payd:resize' && Number.isFinite(m.height)) {
      frame.style.height = `${Math.min(Math.max(m.height, 0), 2000)}px`;
    } else if (m.type === 'payd:change') {
      options.onChange?.(m.state);
    } else if (m.type === 'payd:enter') {
      form.requestSubmit();
    } else if ('id' in m && pending.has(m.id)) {
      pending.get(m.id)!(m);
      pending.delete(m.id);
    }
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (pay.disabled) return;
    formError.textContent = '';
    const chosen = selected();
    const split: Array<Record<string, unknown>> = [];
    let firstInvalid: HTMLInputElement | undefined;
    const check = (f: Field, message: string) => {
      f.setError(message);
      if (message && !firstInvalid) firstInvalid = f.input;
    };
    const isCard = instrumentOf(chosen) === 'CARD';
    let cardAmount = info.amount;
    if (isCard && gift && giftToggle.checked) {
      const digits = giftNumber.input.value.replace(/[\s-]+/g, '');
      check(giftNumber, /^[0-9]{12,19}$/.test(digits) ? '' : t(L, 'errGiftDigits'));
      const minor = giftMinor();
      check(giftAmount, Number.isInteger(minor) && minor > 0 && minor < info.amount ? '' : t(L, 'errGiftAmount', { total }));
      cardAmount = info.amount - minor;
      split.push({ partner: gift.partner, method: gift.method, amount: minor, instrument: { type: 'GIFT_CARD', number: digits } });
    }
    const needsEmail = !!chosen.requires?.includes('customer_email');
    if (needsEmail) check(email, EMAIL.test(email.input.value.trim()) ? '' : t(L, 'errEmail'));
    const cardIndex = split.length;
    const savedCard = isCard ? savedChosen() : undefined;
    // A saved card is paid through the partner that keeps it (one the session offers for CARD).
    split.push({ partner: savedCard?.partner ?? chosen.partner, method: chosen.method, amount: isCard ? cardAmount : info.amount });
    const saved = savedCard ? { savedCardId: savedCard.id } : {};
    const browser = {
      user_agent: navigator.userAgent.slice(0, 2048), locale: navigator.language, javascript_enabled: true, java_enabled: false,
      color_depth: screen.colorDepth, screen_height: screen.height, screen_width: screen.width, utc_time_zone: -new Date().getTimezoneOffset(),
    };
    const customerEmail = needsEmail ? { customer_email: email.input.value.trim() } : {};
    if (isCard) {
      // The card fields check themselves in their frame (and show their errors there).
      // A frame that never answers (a page's CSP without payd in frame-src) is said, not waited for.
      if (!await Promise.race([ready.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))])) {
        formError.textContent = `${t(L, 'loadFailed')} ${t(L, 'cardDetails')}`;
        return;
      }
      const dry = await ask({ type: 'payd:submit', split, cardIndex, dryRun: true, ...saved });
      if (dry.type === 'payd:invalid') {
        frame.focus();
        toFrame({ type: 'payd:focus' });
        return;
      }
    }
    if (firstInvalid) {
      firstInvalid.focus();
      return;
    }
    busy(true);
    try {
      let status: number;
      let body: Problem & Partial<SubmitResult>;
      if (isCard) {
        const answer = await ask({ type: 'payd:submit', split, cardIndex, browser, ...customerEmail, ...saved });
        if (answer.type === 'payd:error') throw new Error(t(L, 'networkError'));
        if (answer.type !== 'payd:result') return busy(false);
        status = answer.status;
        body = answer.body as typeof body;
      } else {
        const res = await fetch(`${base}/checkout/v1/session/payments?lang=${L}`, { method: 'POST', headers, body: JSON.stringify({ split, browser, ...customerEmail }) })
          .catch(() => { throw new Error(t(L, 'networkError')); });
        status = res.status;
        body = (await res.json().catch(() => ({}))) as typeof body;
      }
      if (status < 200 || status > 299) throw new Error(body.invalid_params?.map((p) => p.reason).join('; ') || body.detail || `HTTP ${status}`);
      for (const f of [giftNumber]) f.input.value = '';
      const authorization = body.authorization_status;
      if ((authorization === 'REFUSED' || authorization === 'ERROR') && body.can_retry) {
        // A decline does not end the checkout: say so here and let the shopper try again.
        return retry(authorization, body.attempts_left ?? 0, body.decline_reason);
      }
      if (body.redirection?.url && (options.threeDs ?? 'modal') === 'modal') return openChallenge(body.redirection.url);
      go(body.redirection?.url ?? body.return_url ?? info.return_url);
    } catch (err) {
      formError.textContent = `${t(L, 'didNotGoThrough')} ${(err as Error).message}`;
      busy(false);
      pay.focus();
    }
  });
  // Back (or Forward) to this page from the browser's back/forward cache: the page is as it
  // was left (a payment sent, "Paying…", a challenge open), the session may not be. It is
  // read again: one that takes no further payment is shown closed (paid, in progress...);
  // an attempt left in flight that is over gives the form back.
  window.addEventListener('pageshow', async (event) => {
    if (!event.persisted || !root.contains(form)) return;
    const now = await loadSession().catch(() => undefined);
    if (!now) return;
    if (!now.can_pay) {
      const open = challenge;
      challenge = undefined;
      open?.dialog.remove();
      showClosed(now);
    } else if (pay.disabled && !challenge) {
      busy(false);
      showPrevious(now);
    }
  });
  // Everything is in place: the frame gets the credential now if it is up already (else on its payd:ready).
  if (frameUp && card) later.ready();
  if (!card) sayReady();
}

declare global {
  interface Window { PaydCheckout: { mount: typeof mount } }
}
window.PaydCheckout = { mount };

/**
 * payd's own page in the widget's language: the hosted page is rendered before the
 * session is known (its credential is in the fragment), so its heading, intro and
 * switch (data-payd-t, data-payd-t-label) are said again in the session's language; the
 * switch's links keep the fragment.
 */
function samePageLanguage(selector: string) {
  const L = localeOf(document.querySelector(selector)?.getAttribute('lang'));
  document.querySelectorAll<HTMLAnchorElement>('.payd-lang a').forEach((a) => {
    a.href = `${a.getAttribute('href')!.split('#')[0]}${window.location.hash}`;
    if (L && a.hreflang === L) a.setAttribute('aria-current', 'true');
    else if (L) a.removeAttribute('aria-current');
  });
  if (!L || document.documentElement.lang === L) return;
  document.documentElement.lang = L;
  document.querySelectorAll<HTMLElement>('[data-payd-t]').forEach((el) => { if (hasMessage(el.dataset.paydT!)) el.textContent = t(L, el.dataset.paydT); });
  document.querySelectorAll<HTMLElement>('[data-payd-t-label]').forEach((el) => { if (hasMessage(el.dataset.paydTLabel!)) el.setAttribute('aria-label', t(L, el.dataset.paydTLabel)); });
  const title = document.querySelector('h1[data-payd-t]')?.textContent;
  if (title) document.title = title;
}

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
    // The page's ?lang= is the shopper's choice (payd's language switch).
    const locale = new URLSearchParams(window.location.search).get('lang') ?? undefined;
    if (data) return void mount(selector, { data, threeDs: 'redirect', ...(locale ? { locale } : {}) }).then(() => samePageLanguage(selector));
    const root = document.querySelector(selector);
    root?.replaceChildren(h('p', { class: 'payd-error', role: 'alert', text: t(browserLocale(locale), 'incompleteAddress') }));
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}
