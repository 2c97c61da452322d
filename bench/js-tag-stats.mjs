// What a label costs the cached pair from JS: cuda.alloc(4096).free() with no label and
// with one (_set_memory_metadata), interleaved, 1k cached blocks. A labelled allocation
// passes its tag to the core, which counts it per label (memory_stats_by_tag); an
// unlabelled one pays one test each way in the core (bench/core-ab.mjs counts those).
import { cuda, memory } from '../dist/index.js';
import { freshState, machine } from './common.mjs';

const N = 200_000;
freshState();
const keep = Array.from({ length: 1000 }, (_, i) => cuda.alloc(512 * (1 + (i % 64))));
const run = () => {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) cuda.alloc(4096).free();
  return Number(process.hrtime.bigint() - t0) / N;
};
const res = { untagged: [], tagged: [] };
for (let r = 0; r < 9; r++) {
  memory._set_memory_metadata('');
  res.untagged.push(run());
  memory._set_memory_metadata('weights');
  res.tagged.push(run());
}
memory._set_memory_metadata('');
keep.forEach((b) => b.free());
const median = (a) => [...a].sort((x, y) => x - y)[4];
const u = median(res.untagged);
const t = median(res.tagged);
console.log(`cached pair from JS with and without a label (${machine()})`);
console.log(`no label ${u.toFixed(0)} ns/pair, labelled ${t.toFixed(0)} ns/pair: ${(t / u).toFixed(2)}x`);
