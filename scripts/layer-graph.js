// Prints the import graph between src/'s top folders (issue 41's before/after picture):
// one line per pair, "from -> to  N" (N = import edges), read from dependency-cruiser's
// JSON. Usage: node scripts/layer-graph.js   (or: npm run lint:layers -- graph)
import { cruise } from 'dependency-cruiser';

const top = (p) => {
  const m = /^src\/([^/]+)\//.exec(p);
  if (m) return m[1];
  const f = /^src\/([^/]+)\.ts$/.exec(p);
  return f ? f[1] + '.ts' : null;
};

const result = await cruise(['src'], {
  tsPreCompilationDeps: true,
  doNotFollow: { path: 'node_modules' },
  exclude: { path: '\\.d\\.ts$' },
});
const edges = new Map();
for (const m of result.output.modules) {
  const a = top(m.source);
  if (!a) continue;
  for (const d of m.dependencies) {
    const b = top(d.resolved);
    if (!b || a === b) continue;
    const k = `${a} -> ${b}`;
    edges.set(k, (edges.get(k) ?? 0) + 1);
  }
}
const keys = [...edges.keys()].sort();
for (const k of keys) console.log(`${k.padEnd(34)} ${edges.get(k)}`);
const pairs = new Set();
for (const k of keys) {
  const [a, b] = k.split(' -> ');
  if (edges.has(`${b} -> ${a}`)) pairs.add([a, b].sort().join(' <-> '));
}
console.log(`\n${keys.length} folder-to-folder edges; ${pairs.size} pairs import each other${pairs.size ? ': ' + [...pairs].join(', ') : ''}`);
