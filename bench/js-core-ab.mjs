// The core A/B from JavaScript: two built checkouts (the old core's and the current one)
// loaded into one Node process, each with its own addon and its own runtime; runs
// interleaved. The cached alloc+free pair through each raw binding, the calls monitoring
// loops make, memory_snapshot({ includeTraces: false }) and the single-value getters
// (memory_allocated(), memory_reserved()) through each public API.
// Usage: node bench/js-core-ab.mjs OLD_ROOT NEW_ROOT (bench/core-ab.mjs builds the old one).
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { fillCache } from './cache-setup.mjs';

const [oldRoot, newRoot] = process.argv.slice(2);
if (!oldRoot || !newRoot) throw new Error('usage: node bench/js-core-ab.mjs OLD_ROOT NEW_ROOT');
// The addon object itself (a tree whose addon loads on first use exports loadNative(); an older
// one loads it at import): never the lazy stand-in, whose every call would go through a proxy.
const load = async (root) => {
  const mod = await import(pathToFileURL(path.resolve(root, 'dist/native.js')).href);
  return { api: await import(pathToFileURL(path.resolve(root, 'dist/index.js')).href), native: mod.loadNative?.() ?? mod.native };
};
const apis = { old: await load(oldRoot), new: await load(newRoot) };
const sides = { old: apis.old.native, new: apis.new.native };

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
    fillCache(native, n);
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

// What monitoring loops call, with the 100k-block cache of the last row: memory_stats()
// (the 122 values into a reused array) and the metrics sample.
const callIters = 200_000;
const calls = {
  'memoryStats(0, into)': (native) => {
    const into = native.memoryStats(0);
    return () => native.memoryStats(0, into);
  },
  'monitorSample(into)': (native) => {
    const into = native.monitorSample();
    return () => native.monitorSample(into);
  },
};
console.log('\ncall                    old (ns)   new (ns)  new/old');
for (const [name, make] of Object.entries(calls)) {
  const fns = { old: make(sides.old), new: make(sides.new) };
  const ns = { old: [], new: [] };
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? ['old', 'new'] : ['new', 'old']) {
      const fn = fns[side];
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < callIters; i++) fn();
      ns[side].push(Number(process.hrtime.bigint() - t0) / callIters);
    }
  }
  const o = median(ns.old);
  const w = median(ns.new);
  console.log(`${name.padEnd(22)} ${o.toFixed(1).padStart(9)} ${w.toFixed(1).padStart(10)} ${(w / o).toFixed(3).padStart(8)}`);
}

// The public snapshot without traces, 1000 live 4 KiB blocks (bench/js-snapshot.mjs's state).
const snapNs = { old: [], new: [] };
for (const { api } of Object.values(apis)) {
  api.cuda.sim.configure({ capacityBytes: 64 * 2 ** 30 });
  for (let i = 0; i < 1000; i++) api.cuda.alloc(4096);
  for (let i = 0; i < 3000; i++) api.memory.memory_snapshot({ includeTraces: false });
}
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ['old', 'new'] : ['new', 'old']) {
    const { memory } = apis[side].api;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) memory.memory_snapshot({ includeTraces: false });
    snapNs[side].push(Number(process.hrtime.bigint() - t0) / 1000);
  }
}
const so = median(snapNs.old);
const sn = median(snapNs.new);
console.log(`${'memory_snapshot (1k)'.padEnd(22)} ${so.toFixed(1).padStart(9)} ${sn.toFixed(1).padStart(10)} ${(sn / so).toFixed(3).padStart(8)}`);

// The single-value getters monitoring code calls most (memory_allocated(), memory_reserved()),
// through each public API, same state.
const getterNs = { old: [], new: [] };
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ['old', 'new'] : ['new', 'old']) {
    const { memory } = apis[side].api;
    let sink = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < callIters; i++) sink += memory.memory_allocated(0) + memory.memory_reserved();
    getterNs[side].push(Number(process.hrtime.bigint() - t0) / callIters / 2);
    if (sink < 0) console.log(sink);
  }
}
const go = median(getterNs.old);
const gn = median(getterNs.new);
console.log(`${'memory_allocated etc.'.padEnd(22)} ${go.toFixed(1).padStart(9)} ${gn.toFixed(1).padStart(10)} ${(gn / go).toFixed(3).padStart(8)}`);
