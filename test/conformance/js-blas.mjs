// Matrix multiplication through the JS API (compute.matmul / compute.gemm) on the cuda
// backend: over the fake driver and the fake cuBLAS in the tests (test/contract/blas.test.ts;
// no GPU needed), and the same script on a real GPU with the real cuBLAS
// (bench/gpu/run-on-gpu.sh). Results against a JS reference, every layout, the three dtypes,
// the workspace from the allocator, operands recorded on the stream.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { runCases } from './run-cases.mjs';
import { cuda, compute, memory, monitoring } from '../../dist/index.js';

const fake = cuda.deviceName(0).startsWith('Fake CUDA');
const KERNELS = ['fill_u32', 'wait_flag'];
const image = fake
  ? `FAKECUBIN\n${KERNELS.join('\n')}\n`
  : readFileSync(new URL('../fixtures/kernels/kernels.sm_90.cubin', import.meta.url));
const module = compute.Module.load(image);
const k = { fill32: module.getKernel('fill_u32', ['ptr', 'u32', 'u32']), waitFlag: module.getKernel('wait_flag', ['ptr']) };

let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
/** Small integers: exact in f32, f16 and bf16, and so are their short sums. */
const ints = (n) => Float32Array.from({ length: n }, () => Math.floor(rand() * 9) - 4);

// Float16 and bfloat16 as their bits (Node 20 has no Float16Array).
function f16(x) {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const e = ((u >>> 23) & 0xff) - 127 + 15;
  const m = u & 0x7fffff;
  if (e <= 0) return sign;  // the tests use no subnormals
  if (e >= 31) return sign | 0x7c00;
  let h = sign | (e << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return h;
}
function fromF16(h) {
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : e === 31 ? (m ? NaN : Infinity) : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}
const bf16 = (x) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16;  // truncates: exact for the tests' values
const fromBf16 = (b) => new Float32Array(new Uint32Array([b << 16]).buffer)[0];
const ENCODE = { f32: (xs) => Float32Array.from(xs), f16: (xs) => Uint16Array.from(xs, f16), bf16: (xs) => Uint16Array.from(xs, bf16) };
const DECODE = { f32: (a) => Array.from(a), f16: (a) => Array.from(a, fromF16), bf16: (a) => Array.from(a, fromBf16) };
const BYTES = { f32: 4, f16: 2, bf16: 2 };

/** Row-major reference: C = alpha op(A) op(B) + beta C, batched. */
function reference({ m, n, k: kk, transA = false, transB = false, alpha = 1, beta = 0, batch = 1, lda, ldb, ldc, strideA, strideB, strideC }, A, B, C) {
  const out = Array.from(C);
  for (let p = 0; p < batch; p++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let t = 0; t < kk; t++) {
          const a = transA ? A[p * strideA + t * lda + i] : A[p * strideA + i * lda + t];
          const b = transB ? B[p * strideB + j * ldb + t] : B[p * strideB + t * ldb + j];
          s += a * b;
        }
        const at = p * strideC + i * ldc + j;
        out[at] = alpha * s + (beta === 0 ? 0 : beta * C[at]);
      }
    }
  }
  return out;
}

/** Runs one matmul on fresh buffers and returns [got, expected]. */
async function product(o, dtype = 'f32') {
  const { m, n, k: kk, transA = false, transB = false, batch = 1 } = o;
  const full = {
    ...o,
    lda: o.lda ?? (transA ? m : kk), ldb: o.ldb ?? (transB ? kk : n), ldc: o.ldc ?? n,
  };
  full.strideA = o.strideA ?? (batch > 1 ? m * kk : 0);
  full.strideB = o.strideB ?? (batch > 1 ? kk * n : 0);
  full.strideC = o.strideC ?? (batch > 1 ? m * n : 0);
  const rowsA = transA ? kk : m;
  const rowsB = transB ? n : kk;
  const lenA = full.strideA * (batch - 1) + full.lda * (rowsA - 1) + (transA ? m : kk);
  const lenB = full.strideB * (batch - 1) + full.ldb * (rowsB - 1) + (transB ? kk : n);
  const lenC = full.strideC * (batch - 1) + full.ldc * (m - 1) + n;
  const A = ints(lenA), B = ints(lenB), C0 = ints(lenC);
  const enc = ENCODE[dtype];
  const a = cuda.alloc(lenA * BYTES[dtype]).copyFrom(enc(A));
  const b = cuda.alloc(lenB * BYTES[dtype]).copyFrom(enc(B));
  const c = cuda.alloc(lenC * BYTES[dtype]).copyFrom(enc(C0));
  compute.matmul(a, b, c, { ...o, dtype });
  await c.stream.done();
  const got = DECODE[dtype](c.copyTo(dtype === 'f32' ? new Float32Array(lenC) : new Uint16Array(lenC)));
  const want = reference(full, A, B, C0);
  for (const x of [a, b, c]) x.free();
  return [got, want];
}

const cases = [];
const test = (name, fn) => cases.push([name, fn]);

test('every transpose, with alpha and beta, equals the reference', async () => {
  for (const transA of [false, true]) {
    for (const transB of [false, true]) {
      const [got, want] = await product({ m: 5, n: 7, k: 3, transA, transB, alpha: 2, beta: -1 });
      assert.deepEqual(got, want, `transA ${transA}, transB ${transB}`);
    }
  }
});

test('padded leading dimensions and a strided batch', async () => {
  const [got, want] = await product({ m: 4, n: 6, k: 5, lda: 8, ldb: 9, ldc: 7, batch: 3, strideA: 40, strideB: 50, strideC: 30, beta: 1 });
  assert.deepEqual(got, want);
});

test('f16 and bf16 operands, summed in f32 (and f16 in f16)', async () => {
  for (const dtype of ['f16', 'bf16']) {
    const [got, want] = await product({ m: 6, n: 5, k: 4, transB: true }, dtype);
    assert.deepEqual(got, want, dtype);
  }
  const [got, want] = await product({ m: 3, n: 3, k: 3, compute: 'f16' }, 'f16');
  assert.deepEqual(got, want);
});

test('real values within f32 tolerance, and tf32 within its own', async () => {
  const m = 32, n = 16, kk = 64;
  const A = Float32Array.from({ length: m * kk }, () => rand() * 2 - 1);
  const B = Float32Array.from({ length: kk * n }, () => rand() * 2 - 1);
  const want = reference({ m, n, k: kk, lda: kk, ldb: n, ldc: n, strideA: 0, strideB: 0, strideC: 0 }, A, B, new Float32Array(m * n));
  for (const [compute_, tol] of [['f32', 1e-5], ['tf32', 2e-2]]) {
    const a = cuda.alloc(A.byteLength).copyFrom(A), b = cuda.alloc(B.byteLength).copyFrom(B), c = cuda.alloc(m * n * 4);
    compute.matmul(a, b, c, { m, n, k: kk, compute: compute_ });
    const got = c.copyTo(new Float32Array(m * n));
    for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])), `${compute_} ${i}: ${got[i]} vs ${want[i]}`);
    for (const x of [a, b, c]) x.free();
  }
});

test('gemm is cuBLAS\'s column-major: the same product with the operands read down columns', async () => {
  const m = 3, n = 2, kk = 4;
  const A = ints(m * kk), B = ints(kk * n);  // column-major m x k and k x n
  const a = cuda.alloc(A.byteLength).copyFrom(A), b = cuda.alloc(B.byteLength).copyFrom(B), c = cuda.alloc(m * n * 4);
  compute.gemm(a, b, c, { m, n, k: kk });
  const got = Array.from(c.copyTo(new Float32Array(m * n)));
  const want = [];
  for (let j = 0; j < n; j++) for (let i = 0; i < m; i++) want.push([...Array(kk).keys()].reduce((s, t) => s + A[i + t * m] * B[t + j * kk], 0));
  assert.deepEqual(got, want);
  for (const x of [a, b, c]) x.free();
});

test('views: operands inside larger buffers, at their offsets', async () => {
  const m = 2, n = 2, kk = 2;
  const big = cuda.alloc(4096).fill(0);
  big.copyFrom(new Float32Array([1, 2, 3, 4]), 256).copyFrom(new Float32Array([5, 6, 7, 8]), 512);
  compute.matmul(big.view(256, 16), big.view(512, 16), big.view(1024, 16), { m, n, k: kk });
  assert.deepEqual(Array.from(big.copyTo(new Float32Array(4), 1024)), [19, 22, 43, 50]);
  assert.deepEqual(Array.from(big.copyTo(new Float32Array(4), 1040)), [0, 0, 0, 0], 'nothing written past C');
  big.free();
});

test('the workspace comes from the allocator: one per stream, tagged, in the snapshot, cleared on request', async () => {
  compute.clearBlasWorkspaces();
  const before = memory.memory_allocated();
  const { bytes } = compute.blasWorkspaces();
  const a = cuda.alloc(64).fill(0), b = cuda.alloc(64).fill(0), c = cuda.alloc(64);
  compute.matmul(a, b, c, { m: 4, n: 4, k: 4 });
  compute.matmul(a, b, c, { m: 4, n: 4, k: 4 });
  assert.equal(compute.blasWorkspaces().count, 1, 'one workspace for the stream, reused');
  const side = cuda.Stream.create();
  compute.matmul(a, b, c, { m: 4, n: 4, k: 4, stream: side });
  await side.done();
  assert.equal(compute.blasWorkspaces().count, 2, 'another for another stream');
  assert.equal(memory.memory_allocated() - before, 3 * 512 + 2 * bytes);  // 64-byte buffers take 512-byte blocks
  const blocks = memory._snapshot().segments.flatMap((s) => s.blocks).filter((x) => x.user_metadata === 'cuBLAS workspace');
  assert.equal(blocks.length, 2);
  assert.ok(blocks.every((x) => x.size >= bytes && x.state === 'active_allocated'));
  assert.equal(memory.memory_stats_by_tag()['cuBLAS workspace']?.allocated_bytes.current, 2 * bytes);
  // The metrics' per-label series (cca_tag_allocated_bytes{tag="cuBLAS workspace"}) read the same.
  const tagged = monitoring.readSamples()[0].tags.find((t) => t.name === 'cuBLAS workspace');
  assert.equal(tagged?.bytes, 2 * bytes);
  assert.equal(compute.clearBlasWorkspaces(), 0);
  assert.equal(compute.blasWorkspaces().count, 0);
  assert.equal(memory.memory_allocated() - before, 3 * 512);
  for (const x of [a, b, c]) x.free();
  side.destroy();
});

test('a bias and an activation in the same call (cuBLASLt\'s epilogue), per output column', async () => {
  const m = 3, n = 4, kk = 2;
  const A = ints(m * kk), B = ints(kk * n), bias = ints(n);
  const a = cuda.alloc(A.byteLength).copyFrom(A), b = cuda.alloc(B.byteLength).copyFrom(B);
  const bb = cuda.alloc(bias.byteLength).copyFrom(bias), c = cuda.alloc(m * n * 4);
  const plain = reference({ m, n, k: kk, lda: kk, ldb: n, ldc: n, strideA: 0, strideB: 0, strideC: 0 }, A, B, new Float32Array(m * n));
  const biased = plain.map((v, i) => v + bias[i % n]);
  compute.matmul(a, b, c, { m, n, k: kk, bias: bb });
  assert.deepEqual(Array.from(c.copyTo(new Float32Array(m * n))), biased);
  compute.matmul(a, b, c, { m, n, k: kk, bias: bb, epilogue: 'relu' });
  assert.deepEqual(Array.from(c.copyTo(new Float32Array(m * n))), biased.map((v) => Math.max(0, v)));
  compute.matmul(a, b, c, { m, n, k: kk, epilogue: 'relu' });
  assert.deepEqual(Array.from(c.copyTo(new Float32Array(m * n))), plain.map((v) => Math.max(0, v)));
  compute.matmul(a, b, c, { m, n, k: kk, bias: bb, epilogue: 'gelu' });
  const gelu = (v) => 0.5 * v * (1 + Math.tanh(0.7978845608 * (v + 0.044715 * v ** 3)));
  const got = c.copyTo(new Float32Array(m * n));
  biased.forEach((v, i) => assert.ok(Math.abs(got[i] - gelu(v)) < 1e-3 * (1 + Math.abs(v)), `gelu ${i}: ${got[i]} vs ${gelu(v)}`));
  // The same in f16, its bias f16 too.
  const a16 = cuda.alloc(m * kk * 2).copyFrom(ENCODE.f16(A)), b16 = cuda.alloc(kk * n * 2).copyFrom(ENCODE.f16(B));
  const bias16 = cuda.alloc(n * 2).copyFrom(ENCODE.f16(bias)), c16 = cuda.alloc(m * n * 2);
  compute.matmul(a16, b16, c16, { m, n, k: kk, dtype: 'f16', bias: bias16, epilogue: 'relu' });
  assert.deepEqual(DECODE.f16(c16.copyTo(new Uint16Array(m * n))), biased.map((v) => Math.max(0, v)));
  for (const x of [a, b, bb, c, a16, b16, bias16, c16]) x.free();
});

test('cuBLASLt has its own workspace per stream, tagged, from the allocator', async () => {
  compute.clearBlasWorkspaces();
  const { ltBytes } = compute.blasWorkspaces();
  const a = cuda.alloc(64).fill(0), bias = cuda.alloc(16).fill(0), c = cuda.alloc(64);
  compute.matmul(a, a, c, { m: 4, n: 4, k: 4, bias });
  compute.matmul(a, a, c, { m: 4, n: 4, k: 4 });
  assert.equal(compute.blasWorkspaces().count, 2, 'one cuBLASLt and one cuBLAS workspace for the stream');
  const blocks = memory._snapshot().segments.flatMap((s) => s.blocks).filter((x) => x.user_metadata === 'cuBLASLt workspace');
  assert.equal(blocks.length, ltBytes > 0 ? 1 : 0);
  assert.ok(blocks.every((x) => x.size >= ltBytes));
  compute.clearBlasWorkspaces();
  assert.equal(compute.blasWorkspaces().count, 0);
  for (const x of [a, bias, c]) x.free();
});

function slowStream() {
  const flag = cuda.alloc(4).fill(0);
  const stream = cuda.Stream.create();
  k.waitFlag.launch({ grid: 1, block: 1, stream }, flag);
  return { stream, release: () => flag.copyFrom(new Uint32Array([1])), flag };
}

// With recordStreams (the default) a freed C is not handed out again while the GEMM queued on
// another stream may still write it; with it off, the next allocation gets the same memory
// (the negative control).
async function reusedWhileQueued(recordStreams) {
  const owner = cuda.Stream.create();
  const slow = slowStream();
  const a = cuda.alloc(16 * 16 * 4).fill(0), b = cuda.alloc(16 * 16 * 4).fill(0);
  compute.matmul(a, b, a, { m: 1, n: 1, k: 1, stream: slow.stream });  // the slow stream's workspace, made first
  const c = cuda.alloc(16 * 16 * 4, { stream: owner });
  compute.matmul(a, b, c, { m: 16, n: 16, k: 16, stream: slow.stream, recordStreams });
  c.free();
  const next = cuda.alloc(16 * 16 * 4, { stream: owner });
  const reused = next.ptr === c.ptr;
  slow.release();
  await slow.stream.done();
  for (const x of [a, b, next, slow.flag]) x.free();
  compute.clearBlasWorkspaces();
  slow.stream.destroy();
  owner.destroy();
  return reused;
}

test('operands of another stream are recorded on the GEMM\'s: a freed C is not reused while the GEMM may write it', async () => {
  assert.equal(await reusedWhileQueued(true), false);
});

test('negative control: without recording, the next allocation takes C while the GEMM is queued', async () => {
  assert.equal(await reusedWhileQueued(false), true);
});

await runCases(cases, memory);
