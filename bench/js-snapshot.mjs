// Snapshot costs, PR #172672's workload shape: 1000 live 4 KiB allocations.
//  - memory_snapshot({ includeTraces: false }) with 0 and with 100k recorded entries, each
//    history size in its own fresh process (same allocator state on every backend), 2,000
//    warm-up calls then 2,000 timed one by one: median and p90; the ratio should be ~1
//    (the fast path never reads the history);
//  - _snapshot() (traces included) at 1k and 100k entries, per entry;
//  - PR #172672's own four variants.
// Every setup frees the previous one's blocks first: on the cuda backend freshState() only
// empties the cache, so blocks left live would make later variants measure a bigger state.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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

let live = [];
function setup(entries, context) {
  for (const b of live) b.free();
  freshState();
  memory._record_memory_history({ enabled: 'all', context, maxEntries: entries || 1 });
  live = Array.from({ length: 1000 }, () => cuda.alloc(4096));
  if (entries) fill(entries - 1000);
  return live;
}

// A child: one history size, the no-trace snapshot timed call by call.
const child = process.argv.indexOf('--no-trace-entries');
if (child > 0) {
  setup(Number(process.argv[child + 1]), null);
  const f = () => memory.memory_snapshot({ includeTraces: false });
  for (let i = 0; i < 2000; i++) f();
  const us = [];
  for (let i = 0; i < 2000; i++) {
    const t0 = process.hrtime.bigint();
    f();
    us.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  us.sort((a, b) => a - b);
  console.log(JSON.stringify({ median: us[1000], p90: us[1800], blocks: memory.memory_snapshot().flatMap((g) => g.blocks).length }));
  for (const b of live) b.free();
  memory._record_memory_history(null);
  process.exit(0);
}

console.log(`snapshot cost (${machine()}); 1000 live 4 KiB blocks`);
const fast = {};
for (const entries of [0, 100_000]) {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--no-trace-entries', String(entries)], { encoding: 'utf8' });
  fast[entries] = JSON.parse(out.trim().split('\n').pop());
  console.log(`memory_snapshot({includeTraces:false}) with ${String(entries).padStart(6)} entries: median ${fast[entries].median.toFixed(1)} us, ` +
    `p90 ${fast[entries].p90.toFixed(1)} us (2,000 calls, own process; ${fast[entries].blocks} blocks)`);
}
console.log(`  ratio 100k/0 (medians): ${(fast[100000].median / fast[0].median).toFixed(3)} (target <= 1.1)`);
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
for (const b of live) b.free();
live = [];
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
