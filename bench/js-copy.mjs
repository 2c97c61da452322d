// Pinned copies from JavaScript (copyFromAsync / copyToAsync of 64 MiB between a HostBuffer
// and a DeviceBuffer, 10 copies then a stream synchronize, median of 7) against the bare
// driver loop on the same host (build-tests/cca_copy_bench), alternately, two rounds; and
// the host allocator's cached pair (cuda.allocHost(4096).free()) beside an empty N-API pair.
// Needs the cuda backend for the bandwidth (on the fake driver it runs: figures mean nothing);
// the cached pair runs on any backend.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cuda } from '../dist/index.js';
import { native } from '../dist/native.js';
import { machine } from './common.mjs';

const bytes = 64 << 20;
function median(runs) {
  return runs.sort((a, b) => a - b)[3];
}

function pair(fn, iters = 200_000) {
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    fn(iters);
    runs.push(Number(process.hrtime.bigint() - t0) / iters);
  }
  return median(runs);
}

console.log(`pinned host memory (${machine()})`);
const cached = pair((k) => { for (let i = 0; i < k; i++) cuda.allocHost(4096).free(); });
const empty = pair((k) => { let s = 0; for (let i = 0; i < k; i++) s += native.noop(0, 4096) + native.noop(0, s & 1); return s; });
console.log(`  cached pair cuda.allocHost(4096).free(): ${cached.toFixed(1)} ns (empty N-API pair ${empty.toFixed(1)} ns, ${(cached / empty).toFixed(2)}x)`);

if (cuda.runtimeInfo().backend !== 'cuda') {
  console.log(`  bandwidth skipped: the cuda backend is not in use (${cuda.runtimeInfo().note})`);
  process.exit(0);
}
const fake = cuda.deviceName(0).startsWith('Fake CUDA');
const stream = cuda.Stream.create();
const host = cuda.allocHost(bytes);
host.array.fill(1);
const d = cuda.alloc(bytes, { stream });
function jsGbps(toDevice) {
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 10; i++) {
      if (toDevice) d.copyFromAsync(host);
      else d.copyToAsync(host);
    }
    stream.synchronize();
    runs.push((10 * bytes) / Number(process.hrtime.bigint() - t0));
  }
  return median(runs);
}
const bench = fileURLToPath(new URL('../build-tests/cca_copy_bench', import.meta.url));
function bare() {
  if (!existsSync(bench)) return [NaN, NaN];
  const out = execFileSync(bench, { encoding: 'utf8' });
  return [Number(/HtoDAsync: ([\d.]+)/.exec(out)?.[1]), Number(/DtoHAsync: ([\d.]+)/.exec(out)?.[1])];
}
jsGbps(true);
for (let round = 0; round < 2; round++) {
  const [bh, bd] = bare();
  const [jh, jd] = [jsGbps(true), jsGbps(false)];
  console.log(`  round ${round + 1}: to device ${jh.toFixed(2)} GB/s (bare ${bh.toFixed(2)}, ${(jh / bh).toFixed(3)}x), ` +
    `to host ${jd.toFixed(2)} GB/s (bare ${bd.toFixed(2)}, ${(jd / bd).toFixed(3)}x)  goal >= 0.95${fake ? '  [fake driver: figures mean nothing]' : ''}`);
}
d.free();
host.free();
