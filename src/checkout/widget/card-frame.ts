/// <reference lib="dom" />
// The card frame: payd's page /checkout/card-frame, which the widget puts in an iframe
// on the merchant's page. It holds the card number, expiry, CVC and name; the merchant's
// scripts cannot read it (another origin). It talks only to the page that embeds it
// (the origin the widget wrote in the frame's address fragment, checked on every
// message), tells it events (brand, empty, complete) and never a value, and sends the
// payment to payd itself with the session credential the widget gave it. Nothing is
// written to a URL, storage or the console; the values are cleared once sent.
// It is written in the frame's document (checkout-pages.tsx) and writes the fields at
// once, in the document's language (payd decides it as for the widget's session read)
// and the style the widget put in the fragment, before the widget has read the session;
// the credential (payd:init) comes once the widget shows the form.
import { cardBrand, cvvValid, expiryValid, groupCardNumber, luhnValid, parseExpiry } from './validation.ts';
import { type Locale, localeOf, t } from '../../web/i18n.ts';
import { type Field, field, h, regroup } from './dom.ts';
import type { CardState, FromFrame, ToFrame } from './frame-protocol.ts';
import { sessionIdOf, styleVariables } from './frame-protocol.ts';

const fragment = new URLSearchParams(window.location.hash.replace(/^#/, ''));

/** The embedding page's origin, from the fragment (#origin=...); the frame does nothing without a sound one. */
function parentOrigin(): string | undefined {
  const o = fragment.get('origin');
  if (!o || window.parent === window) return undefined;
  try {
    if (new URL(o).origin !== o || !/^https?:$/.test(new URL(o).protocol)) return undefined;
  } catch {
    return undefined;
  }
  // Where the browser tells (Chromium, Safari), the embedding page must be that origin.
  const ancestors = (window.location as Location & { ancestorOrigins?: DOMStringList }).ancestorOrigins;
  if (ancestors && ancestors.length && ancestors[0] !== o) return undefined;
  return o;
}

const origin = parentOrigin();
const send = (message: FromFrame) => origin && window.parent.postMessage(message, origin);

let credential = '';
/** A saved card is chosen: only the CVC is asked (the card's other details are payd's already). */
let savedMode = false;
let L: Locale = localeOf(document.documentElement.lang) ?? 'en';
let fields: { number: Field; expiry: Field; cvc: Field; holder: Field; brand: HTMLElement } | undefined;

const digitsOf = (f: Field) => f.input.value.replace(/[\s-]+/g, '');
const numberError = () => {
  const d = digitsOf(fields!.number);
  return !/^[0-9]{12,19}$/.test(d) ? t(L, 'errCardDigits') : luhnValid(d) ? '' : t(L, 'errCardInvalid');
};
const expiryError = () => {
  const e = parseExpiry(fields!.expiry.input.value);
  return !e ? t(L, 'errExpiryFormat') : expiryValid(e) ? '' : t(L, 'errExpired');
};
const cvcError = () => (savedMode ? (/^[0-9]{3,4}$/.test(fields!.cvc.input.value.trim()) ? '' : t(L, 'errCvv'))
  : cvvValid(fields!.cvc.input.value, digitsOf(fields!.number)) ? '' : t(L, 'errCvv'));

function state(): CardState {
  const f = fields!;
  return {
    brand: f.brand.textContent ?? '',
    empty: !f.number.input.value && !f.expiry.input.value && !f.cvc.input.value,
    complete: { number: savedMode || !numberError(), expiry: savedMode || !expiryError(), cvc: !cvcError() },
  };
}
let last = '';
const changed = () => {
  const s = state();
  const key = JSON.stringify(s);
  if (key !== last) send({ type: 'payd:change', state: s });
  last = key;
};

let observed = false;
const sendHeight = () => send({ type: 'payd:resize', height: Math.ceil(document.documentElement.getBoundingClientRect().height) });

function build() {
  document.documentElement.lang = L;
  document.title = t(L, 'cardDetails');
  const number = field(t(L, 'cardNumber'), { name: 'cardnumber', inputmode: 'numeric', autocomplete: 'cc-number', maxlength: '23', placeholder: '1234 1234 1234 1234' }, numberError);
  const expiry = field(t(L, 'expiry'), { name: 'exp', inputmode: 'numeric', autocomplete: 'cc-exp', maxlength: '7', placeholder: t(L, 'expiryPlaceholder') }, expiryError);
  const cvc = field(t(L, 'cvv'), { name: 'cvc', inputmode: 'numeric', autocomplete: 'cc-csc', maxlength: '4' }, cvcError);
  const holder = field(t(L, 'holder'), { name: 'ccname', autocomplete: 'cc-name', maxlength: '255' });
  // The number is grouped as typed (as printed on the card) and its brand named; emptied, no brand.
  const brand = h('p', { class: 'payd-brand', id: 'payd-brand', 'aria-live': 'polite' });
  number.input.setAttribute('aria-describedby', `${number.input.getAttribute('aria-describedby')} ${brand.id}`);
  number.input.after(brand);
  fields = { number, expiry, cvc, holder, brand };
  number.input.addEventListener('input', () => {
    brand.textContent = cardBrand(regroup(number.input, groupCardNumber, 19)) ?? '';
  });
  expiry.input.addEventListener('input', (event) => {
    const v = expiry.input.value;
    if ((event as InputEvent).inputType === 'insertText' && /^[0-9]{2}$/.test(v)) expiry.input.value = `${v}/`;
  });
  const root = h('div', { class: 'payd-form payd-card' }, number.wrap, h('div', { class: 'payd-row' }, expiry.wrap, cvc.wrap), holder.wrap);
  for (const f of [number, expiry, cvc, holder]) {
    f.input.addEventListener('input', changed);
    // Enter pays, as in a form of the page.
    f.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        send({ type: 'payd:enter' });
      }
    });
  }
  // Written before the widget shows them: read-only until the credential comes (payd:init), so nothing is typed
  // (or filled by a test driver) into fields the shopper cannot see yet.
  if (!credential) for (const f of [number, expiry, cvc, holder]) f.input.readOnly = true;
  document.body.replaceChildren(root);
  if (!observed) new ResizeObserver(sendHeight).observe(document.documentElement);
  observed = true;
  changed();
}

function clear() {
  const f = fields!;
  for (const x of [f.number, f.expiry, f.cvc]) {
    x.input.value = '';
    x.setError('');
  }
  f.brand.textContent = '';
  changed();
}

/** Checks every field, shows the errors; the first invalid field, or undefined. */
function validate(): Field | undefined {
  const f = fields!;
  let first: Field | undefined;
  const checked = savedMode ? [[f.cvc, cvcError()]] as const : [[f.number, numberError()], [f.expiry, expiryError()], [f.cvc, cvcError()]] as const;
  for (const [x, error] of checked) {
    x.setError(error);
    if (error && !first) first = x;
  }
  return first;
}

async function submit(m: Extract<ToFrame, { type: 'payd:submit' }>) {
  const invalid = validate();
  if (invalid) {
    invalid.input.focus();
    return send({ type: 'payd:invalid', id: m.id });
  }
  if (m.dryRun) return send({ type: 'payd:valid', id: m.id });
  const f = fields!;
  const exp = parseExpiry(f.expiry.input.value)!;
  const holderName = f.holder.input.value.trim();
  const saved = savedMode && typeof m.savedCardId === 'string' ? m.savedCardId : undefined;
  const split = m.split.map((part, i) => (i !== m.cardIndex ? part : saved ? {
    ...part,
    instrument: { type: 'SAVED_CARD', saved_card_id: saved, cvv: f.cvc.input.value.trim() },
  } : {
    ...part,
    instrument: {
      type: 'CARD', number: digitsOf(f.number), expiry_month: exp.month, expiry_year: exp.year, cvv: f.cvc.input.value.trim(),
      ...(holderName ? { holder_name: holderName } : {}),
    },
  }));
  try {
    const res = await fetch(`/checkout/v1/session/payments?lang=${L}`, { // payd's answer in the widget's language
      method: 'POST',
      headers: { 'x-payd-session': credential, 'content-type': 'application/json' },
      body: JSON.stringify({ split, ...(m.browser ? { browser: m.browser } : {}), ...(m.customer_email ? { customer_email: m.customer_email } : {}) }),
    });
    let text = await res.text().catch(() => '{}');
    // payd's answers never carry the number; should one ever quote it, it stays here.
    const pan = digitsOf(f.number);
    if (pan && text.includes(pan)) text = text.split(pan).join('[card number]');
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch { /* not JSON: the status says enough */ }
    if (res.ok) clear(); // the card data leaves the frame once payd has it
    send({ type: 'payd:result', id: m.id, status: res.status, body });
  } catch (err) {
    send({ type: 'payd:error', id: m.id, message: (err as Error).message });
  }
}

/** The merchant's styling options, as CSS variables of the frame (the same from the fragment and from payd:init). */
const applyStyle = (style: unknown) => {
  for (const [name, value] of styleVariables(style)) document.documentElement.style.setProperty(name, value);
};

window.addEventListener('message', (event: MessageEvent) => {
  if (!origin || event.source !== window.parent || event.origin !== origin) return;
  const m = event.data as ToFrame;
  if (!m || typeof m !== 'object' || !fields) return;
  // Only the session this frame was served for (?s=): who may embed it was decided for that session's merchant.
  if (m.type === 'payd:init' && !credential && typeof m.credential === 'string' && m.credential
    && sessionIdOf(m.credential) === new URLSearchParams(window.location.search).get('s')) {
    credential = m.credential;
    for (const x of [fields.number, fields.expiry, fields.cvc, fields.holder]) x.input.readOnly = false;
    applyStyle(m.style);
    // The widget speaks the session's language; payd wrote this frame in the same one,
    // unless they differ (nothing is typed yet: the fields were read-only until now).
    const locale = localeOf(m.locale) ?? 'en';
    if (locale !== L) {
      L = locale;
      build();
    }
    // What the widget missed while it read the session: the fields' state and height.
    last = '';
    changed();
    sendHeight();
  } else if (!credential) {
    return;
  } else if (m.type === 'payd:submit' && Array.isArray(m.split) && Number.isInteger(m.cardIndex)) {
    void submit(m);
  } else if (m.type === 'payd:saved') {
    savedMode = !!m.on;
    for (const x of [fields.number, fields.expiry, fields.holder]) {
      x.wrap.hidden = savedMode;
      x.setError('');
    }
    fields.brand.hidden = savedMode;
    fields.cvc.setError('');
    changed();
  } else if (m.type === 'payd:busy') {
    for (const x of [fields.number, fields.expiry, fields.cvc, fields.holder]) x.input.disabled = !!m.on;
  } else if (m.type === 'payd:focus') {
    if (savedMode) fields.cvc.input.focus();
    else (fields.number.hasError() || !fields.number.input.value ? fields.number : [fields.expiry, fields.cvc].find((x) => x.hasError()) ?? fields.number).input.focus();
  } else if (m.type === 'payd:clear') {
    clear();
  }
});

// The fields at once (only in a frame of a sound embedding page), then the widget is told.
if (origin) {
  try {
    applyStyle(JSON.parse(fragment.get('style') ?? 'null'));
  } catch { /* no style, or not JSON: the default look */ }
  build();
}
send({ type: 'payd:ready' });
