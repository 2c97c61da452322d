// Cached alloc+free pair from JavaScript through N-API, beside a baseline measured in the
// same run: an empty N-API call pair with the same argument shapes (native.noop twice).
//   raw binding: native.alloc + native.free (numbers in, numbers out)
//   public API:  cuda.alloc() -> DeviceBuffer, buf.free() (validation + one JS object; the
//                alloc passes its numbers in the call slots and the free waits in the
//                pending list, so the pair crosses once)
// The last column is the public pair against the cheapest crossing there is: an empty call
// with no arguments and no result (native.noopInSlots twice), which is what the public alloc
// now pays to cross.
// Setup as in bench/native: N free blocks of 64 sizes between live ones; the timed loop
// takes an exact 4096-byte fit. Median of 7 runs of 1e6 pairs. Run after `npm run build`.
import os from 'node:os';
import { cuda, memory } from '../dist/index.js';
import { freshState, machine } from './common.mjs';
import { native } from '../dist/native.js';
import { fillCache } from './cache-setup.mjs';

function median(fn, iters) {
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    fn(iters);
    runs.push(Number(process.hrtime.bigint() - t0) / iters);
  }
  runs.sort((a, b) => a - b);
  return runs[3];
}

const iters = 1_000_000;
console.log(`cached alloc+free pair from JS (${machine()})`);
console.log('cached blocks   empty N-API pair (ns)   raw binding pair (ns)  ratio   public API pair (ns)  ratio   vs argument-less pair');
for (const n of [16, 1000, 100000]) {
  freshState({ capacityBytes: 64 * 2 ** 30 });
  const ptrs = fillCache(native, n);

  const base = median((k) => {
    let s = 0;
    for (let i = 0; i < k; i++) s += native.noop(0, 4096) + native.noop(0, s & 1);
    return s;
  }, iters);
  const slots = native.callSlots();
  const bare = median((k) => {
    for (let i = 0; i < k; i++) {
      slots[1] = i;
      native.noopInSlots();
      native.noopInSlots();
    }
  }, iters);
  const raw = median((k) => {
    for (let i = 0; i < k; i++) native.free(0, native.alloc(0, 4096, 0));
  }, iters);
  const api = median((k) => {
    for (let i = 0; i < k; i++) cuda.alloc(4096).free();
  }, iters);
  if (memory.check_invariants() !== null) throw new Error(memory.check_invariants());
  console.log(`${String(n).padEnd(15)} ${base.toFixed(1).padStart(22)} ${raw.toFixed(1).padStart(23)} ${(raw / base).toFixed(2).padStart(6)} ${api.toFixed(1).padStart(22)} ${(api / base).toFixed(2).padStart(6)} ${(api / bare).toFixed(2).padStart(8)} (${bare.toFixed(1)} ns)`);
  // The live half goes too: on the cuda backend freshState() only empties the cache, and the
  // next row must start from its own N blocks, not these plus its own.
  for (let i = 1; i < ptrs.length; i += 2) native.free(0, ptrs[i]);
}
