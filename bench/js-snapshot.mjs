// Snapshot costs, PR #172672's workload shape: 1000 live 4 KiB allocations (then freed),
// 10 warm-up and 10 timed calls per variant.
//  - memory_snapshot({ includeTraces: false }) with 0 and with 100k recorded entries: the
//    ratio should be ~1 (the fast path never reads the history);
//  - _snapshot() (traces included) at 1k and 100k entries, per entry.
import os from 'node:os';
import { MemPool, cuda, memory, use_mem_pool } from '../dist/index.js';
import { freshState, machine } from './common.mjs';

// 10 warm-up and 10 timed calls (PR #172672's method), after a longer JIT warm-up for
// the cheap variants; the median of 5 such rounds is reported.
const ms = (f, jitWarmup = 10) => {
  for (let i = 0; i < jitWarmup; i++) f();
  const rounds = [];
  for (let r = 0; r < 5; r++) {
    for (let i = 0; i < 10; i++) f();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 10; i++) f();
    rounds.push(Number(process.hrtime.bigint() - t0) / 1e6 / 10);
  }
  rounds.sort((a, b) => a - b);
  return rounds[2];
};

function fill(entries) {
  // Each alloc+free pair records 3 entries (alloc, free_requested, free_completed).
  const pairs = Math.ceil(entries / 3);
  for (let i = 0; i < pairs; i++) cuda.alloc(4096).free();
}

function setup(entries, context) {
  freshState();
  memory._record_memory_history({ enabled: 'all', context, maxEntries: entries || 1 });
  const live = Array.from({ length: 1000 }, () => cuda.alloc(4096));
  if (entries) fill(entries - 1000);
  return live;
}

console.log(`snapshot cost (${machine()}); 1000 live 4 KiB blocks`);
const fast = {};
for (const entries of [0, 100_000]) {
  setup(entries, null);
  fast[entries] = ms(() => memory.memory_snapshot({ includeTraces: false }), 500);
  console.log(`memory_snapshot({includeTraces:false}) with ${String(entries).padStart(6)} entries: ${fast[entries].toFixed(3)} ms`);
}
console.log(`  ratio 100k/0: ${(fast[100000] / fast[0]).toFixed(3)} (target <= 1.1)`);
for (const [entries, context] of [[1000, null], [100_000, null], [100_000, 'alloc']]) {
  setup(entries, context);
  const c0 = process.hrtime.bigint();
  memory._snapshot();
  const cold = Number(process.hrtime.bigint() - c0) / 1e6;
  if (context) console.log(`first _snapshot() with stacks (symbolizes each captured stack once): ${cold.toFixed(0)} ms`);
  const t = ms(() => memory._snapshot(), 0);
  const got = memory._snapshot().device_traces[0].length;
  console.log(`_snapshot() with ${String(got).padStart(6)} entries (stacks: ${context ?? 'none'}): ${t.toFixed(2)} ms, ${(t * 1000 / got).toFixed(3)} us/entry (target <= 0.7 at 100k)`);
}

// PR #172672's test as written: empty_cache, history with defaults (all, unbounded), a
// MemPool, 1000 x 4 KiB allocated inside it and freed; four variants, 10 warm-up and 10
// timed calls each. "with traces" is _snapshot() (our memory_snapshot never reads them).
freshState();
memory.empty_cache();
memory._record_memory_history(null);
memory._record_memory_history();
const pool = new MemPool();
use_mem_pool(pool, () => Array.from({ length: 1000 }, () => cuda.alloc(4096))).forEach((b) => b.free());
const pr = (f) => {
  for (let i = 0; i < 10; i++) f();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 10; i++) f();
  return Number(process.hrtime.bigint() - t0) / 1e6 / 10;
};
const poolWith = pr(() => memory._snapshot({ mempoolId: pool.id }));
const poolWithout = pr(() => pool.snapshot({ includeTraces: false }));
const globalWith = pr(() => memory._snapshot());
const globalWithout = pr(() => memory.memory_snapshot({ includeTraces: false }));
const n = memory._snapshot().device_traces[0].length;
console.log(`\nPR #172672 workload (1000 x 4 KiB in a MemPool, history on, ~${n} entries at the end):`);
console.log(`  MemPool: with traces ${poolWith.toFixed(3)} ms, without ${poolWithout.toFixed(3)} ms (${(poolWith / poolWithout).toFixed(0)}x)`);
console.log(`  global:  with traces ${globalWith.toFixed(3)} ms, without ${globalWithout.toFixed(3)} ms (${(globalWith / globalWithout).toFixed(0)}x)`);
memory._record_memory_history(null);
