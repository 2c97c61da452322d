// History recording cost per alloc+free pair from JS, beside a bare V8 stack capture of
// the same depth measured in the same run (Error.captureStackTrace on a plain object:
// the floor for any JS stack). The pairs run 12 frames deep. Also: live trace events
// (memory.onTrace) with history off, against history on without stacks.
import os from 'node:os';
import { cuda, memory } from '../dist/index.js';
import { freshState, machine } from './common.mjs';

const PAIRS = 20_000;
function deep(n, f) {
  return n === 0 ? f() : deep(n - 1, f) + 0;
}
function median(fn) {
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    fn();
    runs.push(Number(process.hrtime.bigint() - t0) / PAIRS);
  }
  runs.sort((a, b) => a - b);
  return runs[3];
}
const pairs = () => deep(12, () => {
  for (let i = 0; i < PAIRS; i++) cuda.alloc(4096).free();
  return 0;
});

freshState();
const keep = Array.from({ length: 1000 }, (_, i) => cuda.alloc(512 * (1 + (i % 64))));
const results = {};
const variants = [
  ['history off', null],
  ['on, no stacks', { enabled: 'all', context: null, maxEntries: 100_000 }],
  ["on, stacks at alloc ('alloc')", { enabled: 'all', context: 'alloc', maxEntries: 100_000 }],
  ["on, stacks at alloc and free ('all')", { enabled: 'all', context: 'all', maxEntries: 100_000 }],
  ['on, stacks sampled 1/64', { enabled: 'all', context: 'alloc', maxEntries: 100_000, stackSampleRate: 1 / 64 }],
];
for (const [name, opts] of variants) {
  memory._record_memory_history(null);
  if (opts) memory._record_memory_history(opts);
  pairs();
  results[name] = median(pairs);
}
memory._record_memory_history(null);
// A subscriber's queue is drained by a timer, which cannot run inside the timed loop: a
// capacity above the 8 x 20,000 x 4 entries queued keeps every entry (none dropped).
let delivered = 0;
const sub = memory.onTrace((b) => { delivered += b.entries.length; }, { capacity: 2 ** 24 });
pairs();
sub.flush();
results['history off, onTrace subscriber (all actions)'] = median(pairs);
sub.flush();
sub.stop();
Error.stackTraceLimit = 16;
const bare = median(() => deep(12, () => {
  for (let i = 0; i < PAIRS; i++) {
    const h = {};
    Error.captureStackTrace(h);
  }
  return 0;
}));
keep.forEach((b) => b.free());

console.log(`history recording per alloc+free pair from JS (${machine()})`);
const off = results['history off'];
for (const [name, ns] of Object.entries(results)) {
  console.log(`${name.padEnd(40)} ${ns.toFixed(0).padStart(8)} ns/pair   +${(ns - off).toFixed(0)} ns`);
}
const noStacks = results['on, no stacks'];
const perStack = results["on, stacks at alloc ('alloc')"] - noStacks;
const perTwo = (results["on, stacks at alloc and free ('all')"] - noStacks) / 2;
console.log(`bare Error.captureStackTrace, same depth:  ${bare.toFixed(0).padStart(8)} ns`);
console.log(`our cost per captured stack: ${perStack.toFixed(0)} ns ('alloc'), ${perTwo.toFixed(0)} ns ('all'); ratio to bare capture ${(perStack / bare).toFixed(2)} / ${(perTwo / bare).toFixed(2)} (target <= 1.2)`);
const live = results['history off, onTrace subscriber (all actions)'];
console.log(`onTrace subscriber vs history on without stacks: ${(live / noStacks).toFixed(2)}x (${delivered} entries delivered)`);
const sampled = results['on, stacks sampled 1/64'] - noStacks;
console.log(`sampled 1/64: ${sampled.toFixed(0)} ns of stack cost per event on average (target < 1000 ns)`);
