// The cost of monitoring (node --expose-gc bench/js-monitoring.mjs):
// 1. one Prometheus scrape (prom-client's registry.metrics() with the allocator's families)
//    at 0, 1k and 100k cached blocks: time (median of 2,000), native calls, and JS heap
//    allocated per scrape (heap growth over 200 scrapes with no GC in between);
// 2. a busy alloc/free loop (1k cached blocks, yielding every 2,000 pairs, as an async
//    workload does) with and without a 10 Hz collector beside it, alternated 5 times:
//    the slowdown, against the goal of < 1%.
// Baselines in the same run: memory_stats() (the 122 keys as an object) and an empty
// registry's scrape.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import client from 'prom-client';
import { cuda, memory, monitoring } from '../dist/index.js';
import { native } from '../dist/native.js';
import { freshState, machine } from './common.mjs';

if (typeof globalThis.gc !== 'function') {
  const r = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=64', fileURLToPath(import.meta.url)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** N free blocks of 64 sizes cached between N live ones (as cca_core_bench sets up). */
function cache(n) {
  freshState({ capacityBytes: 64 * 2 ** 30 });
  const live = [];
  const freed = [];
  for (let i = 0; i < 2 * n; i++) (i % 2 ? freed : live).push(cuda.alloc(512 * (1 + (i % 64))));
  for (const b of freed) b.free();
  return live;
}

async function scrapeCost(n) {
  const live = cache(n);
  const registry = new client.Registry();
  await monitoring.registerPrometheus({ registry });
  const empty = new client.Registry();
  for (let i = 0; i < 200; i++) await registry.metrics();
  const times = [];
  for (let i = 0; i < 2000; i++) {
    const t = process.hrtime.bigint();
    await registry.metrics();
    times.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const statsTimes = [];
  for (let i = 0; i < 2000; i++) {
    const t = process.hrtime.bigint();
    memory.memory_stats();
    statsTimes.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const nativeTimes = [];
  let buf = native.monitorSample();
  for (let i = 0; i < 2000; i++) {
    const t = process.hrtime.bigint();
    buf = native.monitorSample(buf);
    nativeTimes.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const emptyTimes = [];
  for (let i = 0; i < 2000; i++) {
    const t = process.hrtime.bigint();
    await empty.metrics();
    emptyTimes.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  // Native calls per scrape.
  const original = native.monitorSample;
  let calls = 0;
  native.monitorSample = (...a) => {
    calls++;
    return original(...a);
  };
  for (let i = 0; i < 100; i++) await registry.metrics();
  native.monitorSample = original;
  // JS heap per scrape: growth over 200 scrapes with no collection in between.
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 200; i++) await registry.metrics();
  const heapPerScrape = (process.memoryUsage().heapUsed - before) / 200;
  const text = await registry.metrics();
  for (const b of live) b.free();
  return {
    n, us: median(times), nativeUs: median(nativeTimes), statsUs: median(statsTimes), emptyUs: median(emptyTimes), calls: calls / 100,
    heapKiB: heapPerScrape / 1024, lines: text.split('\n').filter((l) => l && !l.startsWith('#')).length,
  };
}

async function busyLoop(ms, collector) {
  const live = cache(1000);
  const registry = new client.Registry();
  await monitoring.registerPrometheus({ registry });
  let scrapes = 0;
  const timer = collector ? setInterval(() => registry.metrics().then(() => scrapes++), 100) : undefined;
  let pairs = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (let i = 0; i < 2000; i++) cuda.alloc(4096).free();
    pairs += 2000;
    await new Promise((r) => setImmediate(r));
  }
  if (timer) clearInterval(timer);
  for (const b of live) b.free();
  return { rate: pairs / ms, scrapes };
}

console.log(`monitoring cost (${machine()})`);
console.log('cached blocks   scrape (us)   of which the native call (us)   series   native calls/scrape   JS heap/scrape (KiB)   memory_stats() (us)   empty registry scrape (us)');
for (const n of [0, 1000, 100_000]) {
  const r = await scrapeCost(n);
  console.log(`${String(n).padEnd(15)} ${r.us.toFixed(1).padStart(11)} ${r.nativeUs.toFixed(2).padStart(31)} ${String(r.lines).padStart(8)} ${String(r.calls).padStart(20)} ${r.heapKiB.toFixed(1).padStart(22)} ${r.statsUs.toFixed(1).padStart(21)} ${r.emptyUs.toFixed(1).padStart(28)}`);
}
const slow = [];
for (let round = 0; round < 5; round++) {
  const off = await busyLoop(2000, false);
  const on = await busyLoop(2000, true);
  slow.push(1 - on.rate / off.rate);
  console.log(`busy loop round ${round + 1}: ${(off.rate * 1000).toFixed(0)} pairs/s alone, ${(on.rate * 1000).toFixed(0)} pairs/s with a 10 Hz collector (${on.scrapes} scrapes): ${(100 * (1 - on.rate / off.rate)).toFixed(2)}%`);
}
console.log(`slowdown with a 10 Hz collector, median of 5: ${(100 * median(slow)).toFixed(2)}% (goal < 1%)`);
