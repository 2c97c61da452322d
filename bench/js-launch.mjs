// Kernel launch cost from JavaScript (kernel.launch: config, argument checks and packing, one
// native call) against a bare C++ cuLaunchKernel loop on the same host
// (build-tests/cca_launch_bench), run alternately, two rounds each; each figure is ns per
// launch, median of 7 runs of 20 batches of 1,000 launches of an empty kernel with a stream
// synchronize after each batch (ROUNDS=n for more rounds). Needs the cuda backend: on a GPU, the noop kernel of
// test/fixtures/kernels (sm_90 CUBIN, or KERNELS=path); with CCA_LIBCUDA_PATH at the fake
// driver it runs the fake's CPU noop (a check that it runs: figures mean nothing).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compute, cuda } from '../dist/index.js';
import { machine } from './common.mjs';

if (cuda.runtimeInfo().backend !== 'cuda') {
  console.log(`js-launch skipped: the cuda backend is not in use (${cuda.runtimeInfo().note})`);
  process.exit(0);
}
const fake = cuda.deviceName(0).startsWith('Fake CUDA');
let imagePath = process.env.KERNELS ?? fileURLToPath(new URL('../test/fixtures/kernels/kernels.sm_90.cubin', import.meta.url));
if (fake) {
  imagePath = join(tmpdir(), 'cca-fake-kernels.cubin');
  writeFileSync(imagePath, 'FAKECUBIN\nnoop\n');
}
const noop = compute.Module.load(readFileSync(imagePath)).getKernel('noop', ['ptr', 'u32']);
const stream = cuda.Stream.create();
const x = cuda.alloc(4096, { stream });
const config = { grid: 1, block: 32 };

function jsLaunch() {
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    for (let b = 0; b < 20; b++) {
      for (let i = 0; i < 1000; i++) noop.launch(config, x, 0);
      stream.synchronize();
    }
    runs.push(Number(process.hrtime.bigint() - t0) / 20_000);
  }
  return runs.sort((a, b) => a - b)[3];
}

const bench = fileURLToPath(new URL('../build-tests/cca_launch_bench', import.meta.url));
function cppLaunch() {
  if (!existsSync(bench)) return NaN;
  const out = execFileSync(bench, [imagePath], { encoding: 'utf8' });
  return Number(/bare cuLaunchKernel: ([\d.]+) ns/.exec(out)?.[1]);
}

jsLaunch();  // warm-up
const rows = [];
const rounds = Number(process.env.ROUNDS ?? 2);
for (let round = 0; round < rounds; round++) rows.push([cppLaunch(), jsLaunch()]);
console.log(`kernel launch (${machine()}; ${cuda.deviceName(0)}${fake ? ': fake driver, figures mean nothing' : ''})`);
for (const [cpp, js] of rows) {
  console.log(`  bare C++ cuLaunchKernel ${cpp.toFixed(1)} ns, JS kernel.launch ${js.toFixed(1)} ns: ${(js / cpp).toFixed(2)}x (goal <= 1.5)`);
}
x.free();
