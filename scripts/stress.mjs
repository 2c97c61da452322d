// npm run stress [-- --ops N --seed S]
// Random operations through the public API on simulated devices: allocations and frees
// on several devices and streams, record_stream with held streams, MemPools, empty_cache,
// history switched on and off with varying settings, and device faults injected (failing
// device mallocs, failing event queries). After every fault and every 1,000 operations the
// invariant validator runs on every device; every 10,000 the snapshot (with and without
// traces) is compared with the program's own record of its live buffers and with the stats.
// Prints operations, faults, violations and the seed; exit status 1 on any violation.
import { parseArgs } from 'node:util';
import os from 'node:os';
import { CudaOutOfMemoryError, DeviceError, MemPool, Stream, cuda, memory, use_mem_pool } from '../dist/index.js';

const { values } = parseArgs({
  options: { ops: { type: 'string', default: '1000000' }, seed: { type: 'string', default: String(Date.now() % 1_000_000) } },
});
const OPS = Number(values.ops);
const SEED = Number(values.seed);
const DEVICES = 3;
const MiB = 2 ** 20;

let state = SEED >>> 0 || 1;
const rand = () => {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 4294967296;
};
const below = (n) => Math.floor(rand() * n);

cuda.sim.configure({ devices: DEVICES, capacityBytes: 512 * MiB });
const streams = Array.from({ length: DEVICES }, (_, d) => [cuda.defaultStream(d), Stream.create({ device: d }), Stream.create({ device: d })]);
const pools = Array.from({ length: DEVICES }, (_, d) => new MemPool({ device: d }));
const live = [];  // the program's own record: every buffer it holds
const held = new Set();
const counts = { ops: 0, allocs: 0, frees: 0, ooms: 0, mallocFaults: 0, eventFaults: 0, deviceErrors: 0, historyChanges: 0, snapshots: 0, checks: 0 };
const violations = [];

function violation(what) {
  violations.push(`op ${counts.ops}: ${what}`);
  if (violations.length <= 10) console.error(`VIOLATION at op ${counts.ops} (seed ${SEED}): ${what}`);
}

function checkInvariants() {
  counts.checks++;
  for (let d = 0; d < DEVICES; d++) {
    const problem = memory.check_invariants(d);
    if (problem) violation(`device ${d}: ${problem}`);
  }
}

// Live buffers against active_allocated blocks, and the stats against both.
function compareSnapshot() {
  counts.snapshots++;
  const withTraces = rand() < 0.5;
  const segments = withTraces ? memory._snapshot().segments : memory.memory_snapshot();
  for (let d = 0; d < DEVICES; d++) {
    const blocks = new Map();
    for (const s of segments) {
      if (s.device !== d) continue;
      let at = s.address;
      for (const b of s.blocks) {
        if (b.address !== at) violation(`device ${d}: block 0x${b.address.toString(16)} does not follow its neighbour`);
        at = b.address + b.size;
        if (b.state === 'active_allocated') blocks.set(b.address, b);
      }
      if (at !== s.address + s.total_size) violation(`device ${d}: blocks do not tile segment 0x${s.address.toString(16)}`);
    }
    const mine = live.filter((b) => b.device === d && b.ptr !== 0);
    if (mine.length !== blocks.size) violation(`device ${d}: ${mine.length} live buffers but ${blocks.size} allocated blocks`);
    for (const b of mine) {
      const blk = blocks.get(b.ptr);
      if (!blk) violation(`device ${d}: buffer 0x${b.ptr.toString(16)} has no allocated block`);
      else if (blk.requested_size !== b.size) violation(`device ${d}: block 0x${b.ptr.toString(16)} requested ${blk.requested_size}, buffer ${b.size}`);
    }
    const stats = memory.memory_stats(d);
    const sum = [...blocks.values()].reduce((n, b) => n + b.size, 0);
    if (stats['allocated_bytes.all.current'] !== sum) violation(`device ${d}: allocated_bytes ${stats['allocated_bytes.all.current']} but blocks sum to ${sum}`);
    if (stats['allocation.all.current'] !== mine.length) violation(`device ${d}: allocation.all.current ${stats['allocation.all.current']} but ${mine.length} live`);
    const reserved = segments.filter((s) => s.device === d).reduce((n, s) => n + s.total_size, 0);
    if (stats['reserved_bytes.all.current'] !== reserved) violation(`device ${d}: reserved_bytes ${stats['reserved_bytes.all.current']} but segments sum to ${reserved}`);
  }
}

function size() {
  const r = rand();
  if (r < 0.55) return below(4096) + 1;
  if (r < 0.85) return below(1 * MiB) + 1;
  if (r < 0.98) return below(24 * MiB) + 1;
  return r < 0.99 ? 0 : below(200 * MiB) + 1;
}

function alloc() {
  const d = below(DEVICES);
  const stream = streams[d][below(3)];
  const go = () => cuda.alloc(size(), { stream, tag: rand() < 0.1 ? 'tagged' : undefined });
  const b = rand() < 0.1 ? use_mem_pool(pools[d], go) : go();
  live.push(b);
  counts.allocs++;
}

function freeOne() {
  if (live.length === 0) return;
  const i = below(live.length);
  const b = live[i];
  b.free();  // a DeviceError (failed event query) leaves it live: it stays in the record
  live[i] = live[live.length - 1];
  live.pop();
  counts.frees++;
}

function history() {
  counts.historyChanges++;
  const r = rand();
  if (r < 0.3) memory._record_memory_history(null);
  else {
    memory._record_memory_history({
      enabled: r < 0.9 ? 'all' : 'state', context: ['all', 'alloc', 'state', null][below(4)],
      maxEntries: [1, 100, 10_000, 100_000][below(4)], clearHistory: rand() < 0.3, stackSampleRate: rand() < 0.5 ? 1 : 0.1,
    });
  }
}

const started = Date.now();
for (; counts.ops < OPS; counts.ops++) {
  const r = rand();
  let faulted = false;
  try {
    if (r < 0.45) alloc();
    else if (r < 0.88) freeOne();
    else if (r < 0.92 && live.length > 0) {
      const b = live[below(live.length)];
      if (b.ptr !== 0) cuda.recordStream(b, streams[b.device][below(3)]);
    } else if (r < 0.95) {
      const d = below(DEVICES);
      const s = streams[d][1 + below(2)];
      const key = `${d}:${s.handle}`;
      if (held.has(key) && rand() < 0.7) {
        cuda.sim.holdStream(s, false);
        held.delete(key);
      } else if (!held.has(key)) {
        cuda.sim.holdStream(s, true);
        held.add(key);
      } else {
        cuda.sim.completeStream(s);
      }
    } else if (r < 0.955) memory.empty_cache(below(DEVICES));
    else if (r < 0.957) {
      cuda.sim.failNextMallocs(1 + below(3), below(DEVICES));
      counts.mallocFaults++;
      faulted = true;
    } else if (r < 0.958) {
      cuda.sim.failNextEventQueries(1 + below(2), below(DEVICES));
      counts.eventFaults++;
      faulted = true;
    } else if (r < 0.9582) history();
    else if (r < 0.96) cuda.synchronize(below(DEVICES));
    else if (live.length > 0) {
      const b = live[below(live.length)];
      if (b.size > 0) b.fill(below(256), 0, Math.min(b.size, 4096));
    }
  } catch (e) {
    if (e instanceof CudaOutOfMemoryError) counts.ooms++;
    else if (e instanceof DeviceError) counts.deviceErrors++;
    else throw e;
    faulted = true;
  }
  if (faulted || counts.ops % 1000 === 999) checkInvariants();
  if (counts.ops % 10_000 === 9_999) compareSnapshot();
  if (live.length > 3000) while (live.length > 1500) freeOne();
}
// Drain: every fault cleared, every buffer freed, every cache emptied: nothing may be left.
for (let d = 0; d < DEVICES; d++) {
  cuda.sim.failNextEventQueries(0, d);
  cuda.sim.failNextMallocs(0, d);
}
for (const key of held) {
  const [d, h] = key.split(':').map(Number);
  cuda.sim.holdStream(streams[d].find((s) => s.handle === h), false);
}
compareSnapshot();
while (live.length > 0) freeOne();
for (let d = 0; d < DEVICES; d++) {
  cuda.synchronize(d);
  memory.empty_cache(d);
  if (memory.memory_allocated(d) !== 0) violation(`device ${d}: ${memory.memory_allocated(d)} bytes allocated after freeing everything`);
}
checkInvariants();
memory._record_memory_history(null);
const secs = (Date.now() - started) / 1000;
console.log(`stress: seed ${SEED}, ${counts.ops} operations in ${secs.toFixed(1)} s on ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${DEVICES} simulated devices x 3 streams`);
console.log(`  allocations ${counts.allocs}, frees ${counts.frees}, out-of-memory errors ${counts.ooms}`);
console.log(`  faults injected: ${counts.mallocFaults} failing device mallocs, ${counts.eventFaults} failing event queries (${counts.deviceErrors} device errors surfaced)`);
console.log(`  history changed ${counts.historyChanges} times; invariant checks ${counts.checks}; snapshots compared ${counts.snapshots}`);
console.log(`  violations: ${violations.length}`);
if (violations.length > 0) process.exitCode = 1;
