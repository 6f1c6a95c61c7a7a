// What the dashboard's pages show values with, and their stylesheet and script: pages are
// Preact components (layout.tsx, the *-page.tsx files) with landmarks (header, nav, main), a
// skip link, labels on every field, and one small script for enhancements (copy buttons,
// a form disabled once submitted); no inline script or style, under a strict CSP.
// Amounts are shown in major units of their currency (majorText: two decimals, none for
// JPY) and read back the same way; dates in the merchant's time zone.
import type { Role } from './members.ts';
import { majorText, minorOf } from '../money/currency.ts';


/** An amount in minor units, shown in major units of its currency: "1,234.56 EUR", "1,000 JPY". */
export function money(minor: number, currency: string): string {
  return `${majorText(minor, currency)} ${currency}`;
}

/** An amount typed in major units of the currency ("12.50", "1000" for JPY) to minor units; undefined when it is not one. */
export const parseAmount = (text: string, currency: string): number | undefined => minorOf(text, currency);

// ---- the merchant's time zone (Team page; docs/dashboard.md "Time zone") ----

const formats = new Map<string, Intl.DateTimeFormat>();
/** Year to second of an instant in the zone, as numbers (one formatter per zone, kept). */
function parts(ms: number, zone: string): { y: number; mo: number; d: number; h: number; mi: number; s: number } {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    if (formats.size < 1000) formats.set(zone, f);
  }
  const v: Record<string, number> = {};
  for (const part of f.formatToParts(ms)) if (part.type !== 'literal') v[part.type] = Number(part.value);
  return { y: v.year!, mo: v.month!, d: v.day!, h: v.hour!, mi: v.minute!, s: v.second! };
}

/** The zone's offset from UTC at that instant, in ms (Paris in winter: 3,600,000). */
export function zoneOffsetMs(ms: number, zone: string): number {
  const p = parts(ms, zone);
  return Date.UTC(p.y, p.mo - 1, p.d, p.h, p.mi, p.s) - Math.floor(ms / 1000) * 1000;
}

/** The zone's name as given when Intl knows it (Intl may know it under an older name: Asia/Kolkata is Asia/Calcutta to it), else undefined. */
export function validZone(name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/.test(name) || name.length > 64) return undefined;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name }).format(0);
    return name;
  } catch {
    return undefined;
  }
}

/** The zones Intl knows, for the setting's suggestions. */
export const ZONES: readonly string[] = (() => {
  try {
    return ['UTC', ...Intl.supportedValuesOf('timeZone')];
  } catch {
    return ['UTC'];
  }
})();

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** The calendar day (YYYY-MM-DD) of an instant in the zone. */
export function dayIn(d: Date | string | number, zone: string): string {
  const p = parts(new Date(d).getTime(), zone);
  return `${pad(p.y, 4)}-${pad(p.mo)}-${pad(p.d)}`;
}

/** The calendar day n days after (before, n < 0) a day (YYYY-MM-DD). */
export const addDays = (day: string, n: number): string => new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** The instant a calendar day (YYYY-MM-DD) starts in the zone (its first moment, DST included). */
export function dayStart(day: string, zone: string): Date {
  const [y, mo, d] = day.split('-').map(Number) as [number, number, number];
  const wall = Date.UTC(y, mo - 1, d);
  let t = wall - zoneOffsetMs(wall, zone);
  t = wall - zoneOffsetMs(t, zone);
  // A day that starts in a gap (a zone that moves its clocks at midnight): its first moment is later.
  return new Date(dayIn(t, zone) === day ? t : t + 3_600_000);
}

/** The offset as shown beside a time: "UTC", "UTC+01:00", "UTC-03:30". */
function offsetLabel(ms: number, zone: string): string {
  const off = Math.round(zoneOffsetMs(ms, zone) / 60_000);
  if (off === 0) return 'UTC';
  const a = Math.abs(off);
  return `UTC${off < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

/** A time as the merchant reads it: "2026-11-27 06:24 UTC+01:00" in Europe/Paris, "2026-11-27 05:24 UTC" in UTC. */
export function when(d: Date | string, zone: string): string {
  const ms = new Date(d).getTime();
  const p = parts(ms, zone);
  return `${pad(p.y, 4)}-${pad(p.mo)}-${pad(p.d)} ${pad(p.h)}:${pad(p.mi)} ${offsetLabel(ms, zone)}`;
}

/** Year to second in the zone, without the offset (the CSV's local column): "2026-11-27 06:24:05". */
export function localSeconds(d: Date | string, zone: string): string {
  const p = parts(new Date(d).getTime(), zone);
  return `${pad(p.y, 4)}-${pad(p.mo)}-${pad(p.d)} ${pad(p.h)}:${pad(p.mi)}:${pad(p.s)}`;
}

export { ASSETS, page, plain, type Layout } from './layout.tsx';

export const roleLabel: Record<Role, string> = { admin: 'Administrator', operator: 'Operator', viewer: 'Viewer' };

// .table-wrap is positioned: the visually hidden labels inside a wide table (absolute)
// are clipped by its scrolling, not laid out against the page (the Team page was 472 px
// wide at 375 px).
export const DASHBOARD_CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1a1a1a;background:#f6f7f9}
a{color:#0b57d0}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem}
.skip:focus{left:.5rem;z-index:10}
header{display:flex;flex-wrap:wrap;gap:.75rem 1.5rem;align-items:center;padding:.75rem 1rem;background:#fff;border-bottom:1px solid #d9dde3}
.brand{margin:0;font-weight:700}.brand a{color:inherit;text-decoration:none}
.switch,.signout{display:flex;gap:.5rem;align-items:center;margin:0}
.signout{margin-left:auto}
.who{color:#4a4f57;font-size:.9rem;overflow-wrap:anywhere}
nav ul{display:flex;gap:1rem;list-style:none;margin:0;padding:.5rem 1rem;background:#fff;border-bottom:1px solid #d9dde3;overflow-x:auto}
nav a[aria-current=page]{font-weight:700;text-decoration:none;color:#1a1a1a}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:1rem}
.card{background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem}
.card .value{font-size:1.4rem;font-weight:700;margin:0}
.card .label{margin:0;color:#4a4f57}
.table-wrap{position:relative;overflow-x:auto;background:#fff;border:1px solid #d9dde3;border-radius:8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.5rem .75rem;border-bottom:1px solid #eceef1;vertical-align:top}
td.num,th.num{text-align:right;white-space:nowrap}
code{font-size:.85rem;overflow-wrap:anywhere}
form.filters{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.75rem;align-items:end;background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem;margin-bottom:1rem}
label{display:block;font-weight:600;font-size:.9rem;margin-bottom:.25rem}
input,select{width:100%;font:inherit;padding:.45rem .5rem;border:1px solid #8a9099;border-radius:6px;background:#fff}
button{font:inherit;padding:.5rem 1rem;border-radius:6px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#0b57d0}
button.danger{background:#b3261e;border-color:#b3261e}
button.link{background:none;border:none;color:#0b57d0;padding:0;text-decoration:underline}
button:disabled{background:#5f6368;border-color:#5f6368;color:#fff;cursor:not-allowed}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #f9ab00;outline-offset:2px}
.actions{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:1rem}
.actions form{background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem;display:grid;gap:.5rem}
.notice{padding:.75rem 1rem;border-radius:8px;background:#e6f4ea;border:1px solid #34a853}
.error{padding:.75rem 1rem;border-radius:8px;background:#fce8e6;border:1px solid #b3261e}
.pager{display:flex;gap:1rem;margin:1rem 0}
.status{font-weight:600}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem;margin:0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;overflow-wrap:anywhere}
pre.payload{background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem;overflow-x:auto;max-width:100%;margin:0}
td pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere;max-width:40ch}
.hint{color:#4a5260;font-size:.9rem}
textarea.code{display:block;width:100%;box-sizing:border-box;font-family:ui-monospace,monospace;font-size:.9rem}
main{min-width:0}code{overflow-wrap:anywhere}
.chart{background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem;margin:1rem 0}
.chart svg{width:100%;height:8rem}.chart rect{fill:#0b57d0}.chart line{stroke:#8a9099}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;clip:rect(0 0 0 0);clip-path:inset(50%);white-space:nowrap}
ol.timeline{background:#fff;border:1px solid #d9dde3;border-radius:8px;padding:1rem 1rem 1rem 2.5rem;margin:0}
input[type=checkbox]{width:auto}label.inline{display:inline}
table.log th,table.log td{white-space:nowrap}table.log code{overflow-wrap:normal}
@media (max-width:40rem){header{padding:.5rem}.signout{margin-left:0}th,td{padding:.4rem}}
`;

export const DASHBOARD_JS = `(function () {
  // Copy buttons: the value of the field they name.
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var field = document.getElementById(button.getAttribute('data-copy'));
      if (!field || !navigator.clipboard) return;
      navigator.clipboard.writeText(field.value).then(function () { button.textContent = 'Copied'; });
    });
  });
  // A form that moves money is sent once: its button is disabled on submit (the server
  // also refuses a second move with the same key).
  document.querySelectorAll('form[data-once]').forEach(function (form) {
    form.addEventListener('submit', function () {
      form.querySelectorAll('button[type=submit]').forEach(function (b) { b.disabled = true; });
    });
  });
})();
`;
