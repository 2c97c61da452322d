// Issue 23's "fake-driver pair" row: the cached 4096-byte pair's instructions on the cuda
// backend (over the fake driver, so no GPU is needed) against the same loop on the sim
// backend, counted by callgrind inside the loop only, at 16 / 1k / 100k cached blocks.
// Equal counts mean the cuda backend adds no work to a cached pair (it makes no driver call
// there: test/native/device_conformance_test.cpp counts them). Needs valgrind and the test
// build (node scripts/native-tests.mjs). Usage: node bench/backend-instructions.mjs
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const bench = path.join(root, 'build-tests/cca_gpu_bench');
const fake = path.join(root, 'build-tests/libfakecuda.so');
if (!existsSync(bench) || !existsSync(fake)) throw new Error('build the native tests first: node scripts/native-tests.mjs');
const PAIRS = 20000;
const WARM = 1000;  // pair_loop also runs the warm-up; its pairs are counted and divided out

function perPair(backend, blocks) {
  const r = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', '--toggle-collect=*pair_loop*',
    bench, 'pairs', backend, String(blocks), String(PAIRS)], {
    encoding: 'utf8', env: { ...process.env, CCA_LIBCUDA_PATH: fake, FAKE_CUDA_CAPACITY_MB: '65536' },
  });
  const m = /Collected : (\d+)/.exec(r.stderr);
  if (r.status !== 0 || !m) throw new Error(`callgrind failed (${backend}, ${blocks}): ${r.stderr.slice(-2000)}`);
  return Number(m[1]) / (PAIRS + WARM);
}

console.log(`cached 4096-byte pair, instructions per pair (callgrind, ${PAIRS} pairs, inside the loop only)`);
console.log('cached blocks   cuda (fake driver)         sim   cuda/sim');
for (const blocks of [16, 1000, 100000]) {
  const cuda = perPair('cuda', blocks);
  const sim = perPair('sim', blocks);
  console.log(`${String(blocks).padEnd(14)} ${cuda.toFixed(1).padStart(19)} ${sim.toFixed(1).padStart(11)} ${(cuda / sim).toFixed(3).padStart(10)}`);
}
