// The stylesheets of the checkout, served from memory by assets.routes.ts: the widget's
// (on merchant pages), the card frame's, and payd's own shopper pages' (the hosted page,
// the payment-link page, 3-D Secure pages, outcomes; src/web/shopper-page.tsx links it).
/** The look of the fields, shared by the widget and the card frame; the merchant's style options set the variables. */
const FIELDS_CSS = `
.payd-form { font-family: var(--payd-font-family, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif); font-size: var(--payd-font-size, 1rem); color: var(--payd-color, #1b1f24); }
.payd-form .payd-field { margin: 0 0 .9rem; display: flex; flex-direction: column; }
.payd-form .payd-field label, .payd-form legend { font-weight: 600; margin-bottom: .3rem; color: var(--payd-label-color, inherit); }
.payd-form .payd-field input { font: inherit; color: var(--payd-color, #1b1f24); background: var(--payd-background, #fff); padding: .65rem .7rem; border: 1px solid var(--payd-border-color, #8a94a3); border-radius: var(--payd-border-radius, 8px); }
.payd-form input:focus-visible, .payd-form button:focus-visible, .payd-form a:focus-visible { outline: 3px solid var(--payd-focus-color, #1a5fd6); outline-offset: 2px; }
.payd-form input[aria-invalid="true"] { border-color: var(--payd-error-color, #b3261e); }
.payd-form .payd-error { color: var(--payd-error-color, #b3261e); margin: .25rem 0 0; min-height: 1em; font-size: .9rem; }
.payd-form .payd-row { display: grid; grid-template-columns: 1fr 1fr; gap: 0 .75rem; align-items: end; }
.payd-form .payd-row .payd-field { min-width: 0; }
.payd-form .payd-brand, .payd-form .payd-hint { margin: .25rem 0 0; font-size: .9rem; color: #4a5361; min-height: 1em; }
.payd-form [hidden] { display: none !important; }
`;

/** The widget's own look, scoped to its elements (merchant pages load it from payd). */
export const WIDGET_CSS = `${FIELDS_CSS}
.payd-form { max-width: 28rem; }
.payd-form fieldset { border: 0; padding: 0; margin: 0 0 1rem; }
.payd-form .payd-choice { display: flex; gap: .5rem; align-items: center; margin: .35rem 0; }
.payd-form .payd-amount { font-size: 1.1rem; font-weight: 600; }
.payd-form .payd-merchant { font-weight: 600; margin: 0 0 .2rem; }
.payd-form .payd-order { color: #4a5361; margin: 0 0 .4rem; }
.payd-form .payd-items { margin: 0 0 .6rem; padding-left: 1.2rem; color: #4a5361; }
.payd-form .payd-frame { display: block; width: 100%; height: 17rem; border: 0; margin: 0 0 .3rem; color-scheme: normal; }
.payd-form .payd-pay { font-size: 1.05rem; padding: .8rem 1rem; width: 100%; border: 0; border-radius: var(--payd-border-radius, 8px); background: var(--payd-focus-color, #1a5fd6); color: #fff; cursor: pointer; }
.payd-form .payd-pay:disabled { background: #4a5361; color: #fff; cursor: progress; }
.payd-form .payd-disabled { pointer-events: none; color: #4a5361; }
dialog.payd-3ds { width: min(32rem, 94vw); height: min(40rem, 90vh); padding: .5rem; border: 0; border-radius: 12px; display: flex; flex-direction: column; font-family: system-ui, sans-serif; }
dialog.payd-3ds:not([open]) { display: none; }
dialog.payd-3ds::backdrop { background: rgb(0 0 0 / 55%); }
dialog.payd-3ds .payd-3ds-title { margin: .3rem .4rem .6rem; font-weight: 600; color: #1b1f24; }
dialog.payd-3ds .payd-3ds-frame { flex: 1; width: 100%; border: 0; }
`;

/** The card frame's page (/checkout/card-frame): the fields, edge to edge, room for focus outlines. */
export const CARD_FRAME_CSS = `${FIELDS_CSS}
html, body { margin: 0; background: transparent; }
body { padding: 5px; }
.payd-card > .payd-field:last-child { margin-bottom: 0; }
`;

/** payd's own pages (hosted page, link page, 3-D Secure page, outcomes). */
export const CHECKOUT_CSS = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
body { margin: 0; background: #f5f6f8; color: #1b1f24; }
main { max-width: 28rem; margin: 0 auto; padding: 1.5rem 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
.card-box { background: #fff; border-radius: 12px; padding: 1.25rem; box-shadow: 0 1px 3px rgb(0 0 0 / 12%); }
button { font-size: 1.05rem; padding: .8rem 1rem; width: 100%; border: 0; border-radius: 8px; background: #1a5fd6; color: #fff; cursor: pointer; }
button.secondary { background: #e4e7ec; color: #1b1f24; margin-top: .6rem; }
button:focus-visible, a:focus-visible { outline: 3px solid #1a5fd6; outline-offset: 2px; }
.muted { color: #4a5361; font-size: .9rem; }
form.inline { display: inline; }
button.link { background: none; border: 0; padding: 0; width: auto; font: inherit; color: inherit; text-decoration: underline; cursor: pointer; }
textarea, select { font: inherit; padding: .5rem; border: 1px solid #8a94a3; border-radius: 8px; }
.payd-receipt { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0 0 .5rem; }
.payd-receipt dt { color: #4a5361; } .payd-receipt dd { margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin: 0 0 .6rem; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem; border-bottom: 1px solid #d5d9e0; vertical-align: top; }
td { overflow-wrap: anywhere; }
.table-scroll { max-width: 100%; overflow-x: auto; }
.table-scroll table { min-width: 40rem; }
main:has(.table-scroll) { max-width: 72rem; }
nav { overflow-wrap: anywhere; }
.payd-lang ul { list-style: none; display: flex; flex-wrap: wrap; justify-content: flex-end; gap: .25rem .5rem; margin: 0 0 .5rem; padding: 0; }
.payd-lang a { display: inline-block; padding: .3rem .5rem; min-height: 24px; color: #1b1f24; border-radius: 6px; }
.payd-lang a[aria-current="true"] { font-weight: 600; text-decoration: none; background: #e4e7ec; }
${WIDGET_CSS}`;
