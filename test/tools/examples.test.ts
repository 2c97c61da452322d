// The examples/ workloads run as a user would run them, here on our fake driver and fake
// NVRTC (their kernels are CPU functions); bench/gpu/run-on-gpu.sh runs them on a GPU.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../lib/index.js';
import { tempDir } from '../support/temp-dir.js';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const FAKE_NVRTC = fileURLToPath(new URL('../../build-tests/libfakenvrtc.so', import.meta.url));
const FAKE_CUBLAS = fileURLToPath(new URL('../../build-tests/libfakecublas.so', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/mlp-forward.mjs', import.meta.url));

describe.skipIf(!existsSync(FAKE) || !existsSync(FAKE_NVRTC))('examples/mlp-forward.mjs', () => {
  it('runs batches through three layers, matches the CPU reference and dumps a tagged snapshot', async () => {
    const snapshot = join(tempDir('cca-example-'), 'mlp.pickle');
    const out = execFileSync(process.execPath, [EXAMPLE, '3', snapshot], {
      encoding: 'utf8',
      env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_NVRTC_PATH: FAKE_NVRTC, CCA_CUBLAS_PATH: FAKE_CUBLAS, CCA_CUBLASLT_PATH: FAKE_CUBLAS, FAKE_CUDA_CAPACITY_MB: '512' },
    });
    expect(out).toMatch(/layers: cuBLAS 13\.0\.2, one cuBLASLt call each \(the bias and relu in its epilogue\)/);
    expect(out).toMatch(/3 batches of 256 through 784 -> 512 -> 256 -> 10/);
    expect(out).toMatch(/max \|error\| \S+ ok/);
    expect(out).toMatch(/pinned: 4 blocks/);
    const snap = await loadSnapshot(snapshot);
    const tags = new Set(snap.device_traces[0]!.map((e) => e.user_metadata).filter(Boolean));
    for (const tag of ['weights.0', 'bias.2', 'input', 'activations.0', 'activations.2']) expect(tags).toContain(tag);
    const live = snap.segments.flatMap((s) => s.blocks).filter((b) => b.state === 'active_allocated');
    // The weights and biases, and cuBLASLt's workspace for the work stream; every batch's
    // buffers were freed.
    expect(live.map((b) => b.user_metadata ?? '').sort()).toEqual(
      ['bias.0', 'bias.1', 'bias.2', 'cuBLASLt workspace', 'weights.0', 'weights.1', 'weights.2']);
  });
});

describe.skipIf(!existsSync(FAKE) || !existsSync(FAKE_NVRTC))('examples/mlp-forward.mjs without cuBLAS', () => {
  it('multiplies with its own kernel instead, and says so', () => {
    const out = execFileSync(process.execPath, [EXAMPLE, '2', join(tempDir('cca-example-'), 'mlp.pickle')], {
      encoding: 'utf8',
      env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_NVRTC_PATH: FAKE_NVRTC, CCA_CUBLAS_PATH: '/nonexistent/libcublas.so', FAKE_CUDA_CAPACITY_MB: '512' },
    });
    expect(out).toMatch(/layers: one hand-written kernel each \(cuBLAS not found\)/);
    expect(out).toMatch(/max \|error\| \S+ ok/);
  });
});

describe('examples/interop.mjs', () => {
  it('builds a C library against cca.h whose memory memory_stats and snapshots name, and lends it a DLPack tensor', () => {
    const out = execFileSync(process.execPath, [fileURLToPath(new URL('../../examples/interop.mjs', import.meta.url))], {
      encoding: 'utf8',
      env: { ...process.env, CCA_DEVICE: 'sim' },
    });
    expect(out).toMatch(/codec holds 4194304 bytes in 4 allocations/);
    expect(out).toMatch(/snapshot: 4 blocks tagged "codec"/);
    expect(out).toMatch(/borrowed a 8294400-element frame/);
    expect(out).toMatch(/live allocations now: 0/);
  });
});

describe.skipIf(!existsSync(FAKE))('examples/ipc-share.mjs', () => {
  it('shares a buffer with a forked worker over CUDA IPC on the fake driver, both ways', () => {
    const out = execFileSync(process.execPath, [fileURLToPath(new URL('../../examples/ipc-share.mjs', import.meta.url))], {
      encoding: 'utf8',
      env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE },
    });
    expect(out).toMatch(/mapped 1048576 bytes, first words 0,1,2,3, last 262143/);
    expect(out).toMatch(/the worker wrote 0xc0ffee/);
    expect(out).toMatch(/loader: freed; 0 allocations live/);
  });
});

const GRAPH_EXAMPLE = fileURLToPath(new URL('../../examples/graph-forward.mjs', import.meta.url));

describe('examples/graph-forward.mjs', () => {
  it.skipIf(!existsSync(FAKE) || !existsSync(FAKE_NVRTC)).each([
    ['cuBLASLt', []], ['kernel', ['--kernel']],
  ])('captures 24 layers (%s) as one graph whose launch computes what the eager calls do', (layer, args) => {
    const out = execFileSync(process.execPath, [GRAPH_EXAMPLE, '1', ...args], {
      encoding: 'utf8',
      env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_NVRTC_PATH: FAKE_NVRTC, CCA_CUBLAS_PATH: FAKE_CUBLAS,
        CCA_CUBLASLT_PATH: FAKE_CUBLAS, FAKE_CUDA_CAPACITY_MB: '512' },
    });
    const result = JSON.parse(out.trim().split('\n').pop()!);
    expect(result.same).toBe(true);
    expect(result.layer).toBe(layer);
    expect(result.callsPerForward).toBe(24);
    expect(result.nodes).toBe(24);
    expect(result.graphPoolReservedBytes).toBeGreaterThan(0);  // the activations live in the graph's pool
    // No timing is asserted here: the fake driver runs kernels on the CPU (bench/gpu times it).
  });

});

// Examples that need a GPU say so in one line and exit 0 where there is none, rather than
// ending in a stack trace.
describe('examples that need the cuda backend, on the simulated GPU', () => {
  it.each(['graph-forward', 'mlp-forward', 'ipc-share'])('%s prints one line saying what it needs and exits 0', (name) => {
    const file = fileURLToPath(new URL(`../../examples/${name}.mjs`, import.meta.url));
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, CCA_DEVICE: 'sim' } });
    expect(out.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^${name}: needs the cuda backend`))]);
  });
});

describe.skipIf(!existsSync(FAKE))('examples that compile a kernel, on a driver without NVRTC', () => {
  it.each(['graph-forward', 'mlp-forward'])('%s prints one line naming NVRTC and exits 0', (name) => {
    const file = fileURLToPath(new URL(`../../examples/${name}.mjs`, import.meta.url));
    const out = execFileSync(process.execPath, [file], {
      encoding: 'utf8', env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_NVRTC_PATH: '/nonexistent/libnvrtc.so' },
    });
    // A named CCA_NVRTC_PATH is the only library tried, so no system NVRTC can stand in.
    expect(out.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^${name}: needs NVRTC to compile its kernel \\(.*nonexistent`))]);
  });
});
