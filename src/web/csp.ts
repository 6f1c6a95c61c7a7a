// The Content-Security-Policy of payd's pages: nothing by default, scripts, styles,
// images and requests from payd itself, forms posted to payd, never framed; a page widens
// only what it names.
import { createHash } from 'node:crypto';

export interface CspOptions {
  /** Origins (besides 'self') a form of the page may end on after redirects; 'any': no form-action; 'none': no form. */
  formAction?: string[] | 'any' | 'none';
  /** Who may frame the page (CSP frame-ancestors); default 'none'. */
  frameAncestors?: string;
  /** What the page may frame (frame-src); default nothing. */
  frameSrc?: string;
  /** connect-src 'self' (pages whose script calls payd). */
  connect?: boolean;
  /**
   * The page's own inline scripts and styles, allowed by their hashes (cspHash, made once
   * per text) in place of 'self': a page that loads no script or stylesheet file (the card
   * frame). Never 'unsafe-inline'.
   */
  inlineHashes?: { scripts: string[]; styles: string[] };
}

/** A CSP source allowing exactly this inline script or style text ('sha256-<base64>'). */
export const cspHash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

export function csp(o: CspOptions = {}): string {
  const src = (hashes: string[] | undefined) => (hashes?.length ? hashes.join(' ') : "'self'");
  const parts = ["default-src 'none'", `script-src ${src(o.inlineHashes?.scripts)}`, `style-src ${src(o.inlineHashes?.styles)}`, "img-src 'self' data:"];
  if (o.connect) parts.push("connect-src 'self'");
  const form = o.formAction ?? [];
  if (form === 'none') parts.push("form-action 'none'");
  else if (form !== 'any') parts.push(['form-action', "'self'", ...new Set(form)].join(' '));
  parts.push("base-uri 'none'", `frame-ancestors ${o.frameAncestors ?? "'none'"}`);
  if (o.frameSrc) parts.push(`frame-src ${o.frameSrc}`);
  return parts.join('; ');
}
