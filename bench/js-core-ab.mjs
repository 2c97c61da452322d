// The core A/B from JavaScript: two builds of the addon (the old core's and the current
// one) loaded into one Node process, the cached alloc+free pair through each raw binding,
// runs interleaved. Usage: node bench/js-core-ab.mjs OLD.node NEW.node (bench/core-ab.mjs
// builds both and passes them).
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);
const [oldPath, newPath] = process.argv.slice(2);
if (!oldPath || !newPath) throw new Error('usage: node bench/js-core-ab.mjs OLD.node NEW.node');
const sides = { old: require(path.resolve(oldPath)), new: require(path.resolve(newPath)) };

const iters = 1_000_000;
const rounds = Number(process.env.AB_ROUNDS ?? 11);
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
function pairNs(native) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iters; i++) native.free(0, native.alloc(0, 4096, 0));
  return Number(process.hrtime.bigint() - t0) / iters;
}

console.log(`cached alloc+free pair from JS, old core vs new (${os.cpus()[0].model}, ${os.cpus().length} cores, Node ${process.version})`);
console.log('blocks    old (ns)   new (ns)  new/old');
for (const n of [16, 1000, 100000]) {
  for (const native of Object.values(sides)) {
    native.replaceRuntime('sim', 1, 64 * 2 ** 30);
    const ptrs = [];
    for (let i = 0; i < 2 * n; i++) ptrs.push(native.alloc(0, 512 * (1 + (Math.floor(i / 2) % 64)), 0));
    for (let i = 0; i < ptrs.length; i += 2) native.free(0, ptrs[i]);
    pairNs(native);  // warm
  }
  const figures = { old: [], new: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ['old', 'new'] : ['new', 'old'];
    for (const side of order) figures[side].push(pairNs(sides[side]));
  }
  const o = median(figures.old);
  const w = median(figures.new);
  console.log(`${String(n).padEnd(9)} ${o.toFixed(1).padStart(8)} ${w.toFixed(1).padStart(10)} ${(w / o).toFixed(3).padStart(8)}`);
}
