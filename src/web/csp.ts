// The Content-Security-Policy of payd's pages: nothing by default, scripts, styles,
// images and requests from payd itself, forms posted to payd, never framed; a page widens
// only what it names.
export interface CspOptions {
  /** Origins (besides 'self') a form of the page may end on after redirects; 'any': no form-action; 'none': no form. */
  formAction?: string[] | 'any' | 'none';
  /** Who may frame the page (CSP frame-ancestors); default 'none'. */
  frameAncestors?: string;
  /** What the page may frame (frame-src); default nothing. */
  frameSrc?: string;
  /** connect-src 'self' (pages whose script calls payd). */
  connect?: boolean;
}

export function csp(o: CspOptions = {}): string {
  const parts = ["default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:"];
  if (o.connect) parts.push("connect-src 'self'");
  const form = o.formAction ?? [];
  if (form === 'none') parts.push("form-action 'none'");
  else if (form !== 'any') parts.push(['form-action', "'self'", ...new Set(form)].join(' '));
  parts.push("base-uri 'none'", `frame-ancestors ${o.frameAncestors ?? "'none'"}`);
  if (o.frameSrc) parts.push(`frame-src ${o.frameSrc}`);
  return parts.join('; ');
}
