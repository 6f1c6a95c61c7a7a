// The user's merchants, and a merchant's home page: today's volume and authorisation rate,
// and the volume of the last 14 days as bars.
import type { VNode } from 'preact';
import type { Membership } from './members.ts';
import { roleLabel } from './views.ts';

export function MerchantList({ memberships }: { memberships: Membership[] }): VNode {
  if (!memberships.length) return <p>You are not a member of any merchant yet. Ask an administrator to invite you.</p>;
  return <ul>{memberships.map((m) => <li><a href={`/dashboard/${m.entity_id}`}>{m.entity_name}</a> ({roleLabel[m.role]})</li>)}</ul>;
}

/**
 * Bars of a daily series as SVG (no script), with its numbers in a table for screen readers.
 * The table is in a hidden box of 1 px, not hidden itself: a table is never narrower than its
 * content, and it made the home page scroll sideways at 375 px.
 */
export function BarChart({ series, caption }: { series: Array<{ day: string; value: number; label: string }>; caption: string }): VNode {
  const max = Math.max(1, ...series.map((s) => s.value));
  const w = 28;
  const width = series.length * w + 8;
  return (
    <figure class="chart">
      <svg role="img" aria-labelledby="chart-caption" viewBox={`0 0 ${width} 120`} preserveAspectRatio="none">
        {series.map((s, i) => {
          const h = Math.round((s.value / max) * 100);
          return <rect x={i * w + 4} y={110 - h} width={w - 8} height={Math.max(h, s.value > 0 ? 2 : 0)}><title>{`${s.day}: ${s.label}`}</title></rect>;
        })}
        <line x1="0" y1="110" x2={width} y2="110" />
      </svg>
      <figcaption id="chart-caption">{caption}</figcaption>
      <div class="visually-hidden">
        <table>
          <caption>{caption}</caption>
          <thead><tr><th scope="col">Day</th><th scope="col">Volume</th></tr></thead>
          <tbody>{series.map((s) => <tr><td>{s.day}</td><td>{s.label}</td></tr>)}</tbody>
        </table>
      </div>
    </figure>
  );
}

export interface HomeFigures {
  entityId: string;
  volume: string;
  rate: string;
  authorized: number;
  series: Array<{ day: string; value: number; label: string }>;
  caption: string;
}

export function HomeBody(p: HomeFigures): VNode {
  return (
    <>
      <section class="cards" aria-label="Today">
        <div class="card"><p class="label">Volume authorised today</p><p class="value">{p.volume}</p></div>
        <div class="card"><p class="label">Authorisation rate today</p><p class="value">{p.rate}</p></div>
        <div class="card"><p class="label">Payments authorised today</p><p class="value">{p.authorized}</p></div>
      </section>
      <BarChart series={p.series} caption={p.caption} />
      <p><a href={`/dashboard/${p.entityId}/payments`}>See the payments</a></p>
    </>
  );
}
