// Matrix multiplication from JS (compute.matmul / compute.gemm) on the cuda backend over the
// fake driver and the fake cuBLAS (both built by the C++ tests; no GPU needed). The backend
// and the library are chosen per process, so each case runs in a child process. The
// conformance script (test/conformance/js-blas.mjs) checks results, layouts, dtypes, the
// workspace and stream recording, and runs on a real GPU too; here, what a JS user sees
// beyond it: bad shapes refused with a code and nothing changed, the workspace's size from
// CUBLAS_WORKSPACE_CONFIG, GEMMs under graph capture, a missing cuBLAS, the simulator, and the
// parameter layout the two sides share.
import { execFileSync } from 'node:child_process';
import { ENTRY, runScript } from '../support/child-script.js';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GemmParam } from '../../lib/compute/gemm-params.js';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const FAKE_CUBLAS = fileURLToPath(new URL('../../build-tests/libfakecublas.so', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../conformance/js-blas.mjs', import.meta.url));
const ready = existsSync(FAKE) && existsSync(FAKE_CUBLAS) && existsSync(fileURLToPath(ENTRY));
// The fake library answers for cuBLASLt too.
const env = { CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_CUBLAS_PATH: FAKE_CUBLAS, CCA_CUBLASLT_PATH: FAKE_CUBLAS, FAKE_CUDA_CAPACITY_MB: '256' };

function run(script: string, extra: Record<string, string> = {}): any {
  return runScript('const { cuda, compute, memory } = cca;', script, { ...env, ...extra });
}

// A 4 x 4 product's buffers, and the state a refused call must leave as it was.
const SETUP = `
  const a = cuda.alloc(64).copyFrom(new Float32Array(16).fill(1));
  const b = cuda.alloc(64).copyFrom(new Float32Array(16).fill(2));
  const c = cuda.alloc(64).copyFrom(new Float32Array(16).fill(7));
  const state = () => JSON.stringify([memory.memory_allocated(), compute.blasWorkspaces().count,
    Array.from(c.copyTo(new Float32Array(16)))]);
  const before = state();`;

describe.skipIf(!ready)('compute.matmul on the fake cuBLAS', () => {
  it('passes the conformance script (results, layouts, dtypes, workspace, stream recording)', () => {
    const out = execFileSync(process.execPath, [SCRIPT], { encoding: 'utf8', env: { ...process.env, ...env } });
    expect(out).toMatch(/\n(\d+) passed, 0 failed\n$/);
    expect(Number(/(\d+) passed/.exec(out)![1])).toBeGreaterThanOrEqual(9);
  });

  it('refuses a bad shape or operand with a code that names it, changing nothing', () => {
    const out = run(`${SETUP}
      const calls = [
        () => compute.matmul(a, b, c, { m: 4, n: 4, k: 4, lda: 2 }),
        () => compute.matmul(a, b, c, { m: 4, n: 5, k: 4 }),
        () => compute.matmul(a, b, c.view(0, 32), { m: 4, n: 4, k: 4 }),
        () => compute.matmul(a, b, c, { m: 4, n: 4, k: 4, compute: 'f16' }),
        () => compute.matmul(a, b, c, { m: 2, n: 2, k: 2, batch: 2, strideC: 1 }),
        () => compute.matmul(a, b, c, { m: -1, n: 4, k: 4 }),
        () => compute.matmul(a, b, c, { m: 4, n: 4 }),
        () => compute.matmul(a, b, c, { m: 4, n: 4, k: 4, dtype: 'f64' }),
        () => compute.matmul(a, 5, c, { m: 4, n: 4, k: 4 }),
        () => compute.matmul(a, b, c, { m: 4, n: 4, k: 4, trasnA: true }),
        () => { const d = cuda.alloc(64); d.free(); compute.matmul(a, b, d, { m: 4, n: 4, k: 4 }); },
        () => compute.matmul(a, b, c, { m: 4, n: 4, k: 4, bias: c.view(0, 8) }),
        () => compute.matmul(a, b, c, { m: 4, n: 4, k: 4, epilogue: 'tanh' }),
      ];
      const errors = calls.map((f) => { try { f(); return null; } catch (e) { return [e.code, e.message]; } });
      return { errors, same: state() === before, invariants: memory.check_invariants() };`);
    const codes = out.errors.map((e: [string, string] | null) => e?.[0]);
    expect(codes).toEqual(['ERR_CCA_GEMM_SHAPE', 'ERR_CCA_OUT_OF_BOUNDS', 'ERR_CCA_OUT_OF_BOUNDS', 'ERR_CCA_GEMM_SHAPE',
      'ERR_CCA_GEMM_SHAPE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE',
      'ERR_INVALID_ARG_TYPE', 'ERR_CCA_INVALID_POINTER', 'ERR_CCA_OUT_OF_BOUNDS', 'ERR_INVALID_ARG_TYPE']);
    const messages = out.errors.map((e: [string, string]) => e[1]);
    expect(messages[0]).toMatch(/lda is 2 but A's stored rows hold 4 elements; give lda >= 4/);
    expect(messages[1]).toMatch(/B spans 80 bytes but its buffer or view holds 64/);
    expect(messages[2]).toMatch(/C spans 64 bytes but its buffer or view holds 32/);
    expect(messages[3]).toMatch(/compute 'f16' .* f16 operands only/);
    expect(messages[4]).toMatch(/outputs overlap; give strideC >= 4/);
    expect(out.same).toBe(true);
    expect(out.invariants).toBeNull();
  });

  it('sizes the workspace by CUBLAS_WORKSPACE_CONFIG (PyTorch\'s grammar), and runs without one at :0:0', () => {
    const script = `${SETUP}
      compute.matmul(a, b, c, { m: 4, n: 4, k: 4 });
      return { ...compute.blasWorkspaces(), c: c.copyTo(new Float32Array(1))[0] };`;
    expect(run(script, { CUBLAS_WORKSPACE_CONFIG: ':1024:2:16:4' })).toEqual({ bytes: 2 * 2 ** 20 + 64 * 1024, ltBytes: 2 ** 20, count: 1, c: 8 });
    expect(run(script, { CUBLAS_WORKSPACE_CONFIG: ':0:0' })).toEqual({ bytes: 0, ltBytes: 2 ** 20, count: 0, c: 8 });
    // A malformed value falls back to the default, as PyTorch's does (32 MiB from Hopper on;
    // the fake device reports compute capability 9.0).
    expect(run(script, { CUBLAS_WORKSPACE_CONFIG: '4096:2' })).toEqual({ bytes: 32 * 2 ** 20, ltBytes: 2 ** 20, count: 1, c: 8 });
    // cuBLASLt's, in KiB (PyTorch's CUBLASLT_WORKSPACE_SIZE).
    expect(run(script, { CUBLASLT_WORKSPACE_SIZE: '256' })).toMatchObject({ ltBytes: 256 * 1024 });
  });

  it('captures GEMMs in a graph: the workspace comes from the graph\'s pool and outlives clearing while the graph lives', () => {
    const out = run(`
      const n = 8;
      const s = cuda.Stream.create();
      const x = cuda.alloc(n * n * 4, { stream: s }), w = cuda.alloc(n * n * 4, { stream: s }), y = cuda.alloc(n * n * 4, { stream: s });
      w.copyFrom(Float32Array.from({ length: n * n }, (_, i) => (i % (n + 1) === 0 ? 2 : 0)));  // 2 * identity
      const graph = compute.captureGraph(s, () => compute.matmul(x, w, y, { m: n, n, k: n }));
      const pooled = memory._snapshot().segments.filter((g) => g.blocks.some((b) => b.user_metadata === 'cuBLAS workspace'))
        .map((g) => g.segment_pool_id);
      const results = [];
      for (const v of [1, 3]) {
        x.copyFrom(new Float32Array(n * n).fill(v));
        graph.launch();
        await s.done();
        results.push(y.copyTo(new Float32Array(1))[0]);
      }
      const kept = compute.clearBlasWorkspaces();
      graph.launch();
      await s.done();
      graph.destroy();
      return { pooled, results, kept, count: compute.blasWorkspaces().count, after: y.copyTo(new Float32Array(1))[0],
        invariants: memory.check_invariants() };`);
    expect(out.pooled).toHaveLength(1);
    expect(out.pooled[0][0]).toBeGreaterThan(0);  // a graph's own pool: (n, 0)
    expect(out.results).toEqual([2, 6]);
    expect(out.kept).toBe(1);
    expect(out.count).toBe(1);
    expect(out.after).toBe(6);
    expect(out.invariants).toBeNull();
  });

  it('refuses clearing the workspaces during a capture', () => {
    const out = run(`
      const s = cuda.Stream.create();
      try { compute.captureGraph(s, () => compute.clearBlasWorkspaces()); return null; } catch (e) { return e.code; }`);
    expect(out).toBe('ERR_CCA_CAPTURE_UNSUPPORTED');
  });

  it('without cuBLAS, says why (every path tried) and refuses with a code', () => {
    const out = run(`${SETUP}
      let error = null;
      try { compute.matmul(a, b, c, { m: 4, n: 4, k: 4 }); } catch (e) { error = [e.code, e.message]; }
      return { info: compute.blasInfo(), error, same: state() === before };`, { CCA_CUBLAS_PATH: '/nonexistent/libcublas.so.13' });
    expect(out.info.available).toBe(false);
    expect(out.info.reason).toMatch(/cuBLAS not found: tried \/nonexistent\/libcublas\.so\.13/);
    expect(out.error[0]).toBe('ERR_CCA_BLAS_UNAVAILABLE');
    expect(out.same).toBe(true);
  });

  it('reports the library it found', () => {
    expect(run('return compute.blasInfo();')).toEqual({
      available: true, reason: '', path: FAKE_CUBLAS, version: '13.0.2', ltAvailable: true, ltReason: '', ltPath: FAKE_CUBLAS,
    });
    // cuBLASLt is looked for beside cuBLAS when nothing names it; a bias then needs it.
    const out = run(`const a = cuda.alloc(64), bias = cuda.alloc(16);
      const info = compute.blasInfo();
      try { compute.matmul(a, a, a, { m: 4, n: 4, k: 4, bias }); return [info, null]; } catch (e) { return [info, e.code]; }`,
    { CCA_CUBLASLT_PATH: '' });
    expect(out[0].ltAvailable).toBe(false);
    expect(out[0].ltReason).toContain(FAKE_CUBLAS.replace(/libfakecublas\.so$/, 'libcublasLt.so.13'));
    expect(out[1]).toBe('ERR_CCA_BLAS_UNAVAILABLE');
  });
});

describe('compute.matmul on the simulator', () => {
  it('refuses, naming the cuda backend', () => {
    const out = run(`const a = cuda.alloc(64);
      try { compute.matmul(a, a, a, { m: 2, n: 2, k: 2 }); return null; } catch (e) { return [e.code, e.message]; }`,
    { CCA_DEVICE: 'sim' });
    expect(out[0]).toBe('ERR_CCA_BLAS_UNSUPPORTED');
    expect(out[1]).toMatch(/simulated.*use the cuda backend/);
  });
});

describe('gemm\'s parameter layout', () => {
  it('is the same in gemm_params.h and lib/compute/gemm-params.ts', () => {
    const header = readFileSync(new URL('../../native/binding/gemm_params.h', import.meta.url), 'utf8');
    const native = Object.fromEntries([...header.matchAll(/kGemm(\w+) = (\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
    const js: Record<string, number> = {
      Stream: GemmParam.Stream, TransA: GemmParam.TransA, TransB: GemmParam.TransB, M: GemmParam.M, N: GemmParam.N,
      K: GemmParam.K, ABase: GemmParam.ABase, AOffset: GemmParam.AOffset, Lda: GemmParam.Lda, StrideA: GemmParam.StrideA,
      BBase: GemmParam.BBase, BOffset: GemmParam.BOffset, Ldb: GemmParam.Ldb, StrideB: GemmParam.StrideB,
      CBase: GemmParam.CBase, COffset: GemmParam.COffset, Ldc: GemmParam.Ldc, StrideC: GemmParam.StrideC,
      Batch: GemmParam.Batch, Dtype: GemmParam.Dtype, Compute: GemmParam.Compute, Alpha: GemmParam.Alpha,
      Beta: GemmParam.Beta, Record: GemmParam.Record, StackId: GemmParam.StackId, ALimit: GemmParam.ALimit,
      BLimit: GemmParam.BLimit, CLimit: GemmParam.CLimit, RowMajor: GemmParam.RowMajor, BiasBase: GemmParam.BiasBase,
      BiasOffset: GemmParam.BiasOffset, BiasLimit: GemmParam.BiasLimit, Epilogue: GemmParam.Epilogue, ParamCount: GemmParam.ParamCount,
    };
    expect(native).toEqual(js);
  });
});
