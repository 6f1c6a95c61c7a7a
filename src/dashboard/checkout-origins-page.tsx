// The Checkout origins page's body (checkout-origins.routes.ts): the listed origins, each
// with its Remove form, and the form that adds one (the draft kept after a refusal).
import type { VNode } from 'preact';
import { CsrfField } from '../web/index.ts';
import { MAX_CHECKOUT_ORIGINS } from '../admin/entities.schemas.ts';
import type { Member } from './links-keys.routes.ts';
import { Messages } from './parts.tsx';

export function CheckoutOriginsBody({ m, origins, draft, message }: { m: Member; origins: string[]; draft: string; message?: { notice?: string; error?: string } | undefined }): VNode {
  const at = `/dashboard/${m.entity.entity_id}/checkout-origins`;
  return (
    <>
      <Messages notice={message?.notice} error={message?.error} />
      <p>The sites whose pages may embed this merchant's card frame and 3-D Secure frame (the checkout's fields in your own page).
        Browsers refuse the frames in any other site's page (<code>Content-Security-Policy: frame-ancestors</code>); payd's own pages (hosted page, payment links) always may.</p>
      <p>{origins.length ? `${origins.length} of at most ${MAX_CHECKOUT_ORIGINS} origins.` : 'None listed: any site may embed the frames. List your shop\'s origins so that no other site can.'}</p>
      {origins.length ? (
        <ul aria-label="Checkout origins">
          {origins.map((o) => (
            <li>
              <form method="post" action={`${at}/remove`}>
                <CsrfField token={m.csrf} /><input type="hidden" name="origin" value={o} />
                <code>{o}</code> <button type="submit" class="link">Remove<span class="visually-hidden"> {o}</span></button>
              </form>
            </li>
          ))}
        </ul>
      ) : null}
      {origins.length < MAX_CHECKOUT_ORIGINS ? (
        <form method="post" action={at} class="card" data-once>
          <CsrfField token={m.csrf} />
          <label for="origin">Origin</label>
          <input id="origin" name="origin" type="text" inputMode="url" autocomplete="off" spellcheck={false} required maxlength={200} value={draft} aria-describedby="origin-hint" />
          <p class="hint" id="origin-hint">Scheme, host and port only, as the browser shows it: https://shop.example or https://shop.example:8443 (http only for localhost), no path.</p>
          <p><button type="submit">Add the origin</button></p>
        </form>
      ) : <p>The list is full: remove an origin to add another.</p>}
    </>
  );
}
