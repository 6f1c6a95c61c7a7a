// The `date-time` format of every request schema, stricter than RFC 3339's grammar: a
// timestamp that passes it is one that JavaScript's Date and PostgreSQL's timestamptz
// both take as written. RFC 3339 allows a leap second (23:59:60), which Date.parse turns
// into NaN and PostgreSQL refuses, and any offset up to ±23:59, where PostgreSQL stops at
// ±15:59; both used to pass validation and fail deep inside (a 500). Refused here, they
// are a 400 naming the field.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function isStrictDateTime(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : DAYS[month - 1]!)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  // Offsets in use run from -12:00 to +14:00; anything within ±14:00 is taken.
  if (m[7] !== undefined && (Number(m[7]) * 60 + Number(m[8]) > 14 * 60 || Number(m[8]) > 59)) return false;
  // The instant itself stays within years 1 to 9999 in UTC: 9999-12-31T23:59:59-14:00 is in
  // year 10000, which toISOString writes as +010000-… and PostgreSQL refuses.
  const instant = Date.parse(value);
  if (!Number.isFinite(instant)) return false;
  const utcYear = new Date(instant).getUTCFullYear();
  return utcYear >= 1 && utcYear <= 9999;
}

/** Ajv's onCreate hook: replaces ajv-formats' `date-time` with the strict one. */
export function strictDateTimeFormat(ajv: { addFormat(name: string, format: { type: 'string'; validate: (s: string) => boolean }): unknown }): void {
  ajv.addFormat('date-time', { type: 'string', validate: isStrictDateTime });
}
