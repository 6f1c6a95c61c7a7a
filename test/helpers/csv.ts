// The dashboard's CSV export read back in tests: RFC 4180 records (CRLF line ends, quoted
// cells, doubled quotes) to cells.
import assert from 'node:assert/strict';

/** RFC 4180 lines to cells; every record, the last too, ends with CRLF. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; } else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++; } else cell += c;
  }
  assert.equal(cell, '', 'the last line ends with CRLF');
  assert.equal(row.length, 0, 'the last line ends with CRLF');
  return rows;
}
