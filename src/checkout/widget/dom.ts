/// <reference lib="dom" />
// Small DOM helpers shared by the widget and the card frame (both bundled by esbuild).

let uid = 0;
export const nextId = (prefix: string) => `${prefix}-${++uid}`;

export const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Array<Node | string>) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v);
  }
  el.append(...children);
  return el;
};

export interface Field {
  wrap: HTMLDivElement;
  input: HTMLInputElement;
  /** Shows (or, with '', clears) the field's error. */
  setError(message: string): void;
  /** Whether the field shows an error now. */
  hasError(): boolean;
}

/**
 * A labelled input with its error line. check: the field's error for its value ('' when
 * valid); once an error shows, it is checked again as the shopper types and goes away as
 * soon as the value is valid.
 */
export function field(label: string, attrs: Record<string, string>, check?: () => string): Field {
  const id = nextId(`payd-${attrs.name}`);
  const input = h('input', { id, ...attrs, 'aria-describedby': `${id}-error` });
  const error = h('p', { id: `${id}-error`, class: 'payd-error', 'aria-live': 'polite' });
  const wrap = h('div', { class: 'payd-field' }, h('label', { for: id, text: label }), input, error);
  const setError = (message: string) => {
    error.textContent = message;
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  };
  const hasError = () => !!error.textContent;
  if (check) input.addEventListener('input', () => { if (hasError()) setError(check()); });
  return { wrap, input, setError, hasError };
}

/** Keeps digits grouped as typed, the caret after the same digit. */
export function regroup(el: HTMLInputElement, group: (digits: string) => string, maxDigits: number): string {
  const caretDigits = el.value.slice(0, el.selectionStart ?? el.value.length).replace(/\D/g, '').length;
  const digits = el.value.replace(/\D/g, '').slice(0, maxDigits);
  const grouped = group(digits);
  if (grouped !== el.value) {
    el.value = grouped;
    let pos = 0;
    for (let seen = 0; pos < grouped.length && seen < caretDigits; pos++) if (/[0-9]/.test(grouped[pos]!)) seen++;
    if (document.activeElement === el) el.setSelectionRange(pos, pos);
  }
  return digits;
}
