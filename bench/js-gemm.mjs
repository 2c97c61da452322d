// GEMM throughput through compute.matmul on the cuda backend (node bench/js-gemm.mjs [reps]):
// the shapes and dtypes of bench/gpu/pytorch_gemm.py, which times torch.mm / torch.bmm on
// the same machine; RESULTS.md takes the ratio (goal: >= 0.95x PyTorch). Each shape: one
// warm-up call, then `reps` calls on one stream, timed by events; TFLOP/s = 2mnk * batch / s.
import { compute, cuda } from '../dist/index.js';

const reps = Number(process.argv[2] ?? 50);
if (cuda.runtimeInfo().backend !== 'cuda' || !compute.blasInfo().available) {
  console.log(`js-gemm: needs the cuda backend and cuBLAS (${compute.blasInfo().reason || cuda.runtimeInfo().note})`);
  process.exit(0);
}
export const SHAPES = [
  // [m, n, k, batch, dtype, compute]
  [4096, 4096, 4096, 1, 'f32', 'f32'],
  [4096, 4096, 4096, 1, 'f32', 'tf32'],
  [4096, 4096, 4096, 1, 'f16', 'f32'],
  [4096, 4096, 4096, 1, 'bf16', 'f32'],
  [256, 256, 256, 1, 'f32', 'f32'],
  [64, 256, 256, 1, 'f32', 'f32'],
  [512, 512, 64, 64, 'f16', 'f32'],
];
const bytes = { f32: 4, f16: 2, bf16: 2 };
const stream = cuda.Stream.create();
const rows = [];
for (const [m, n, k, batch, dtype, comp] of SHAPES) {
  const e = bytes[dtype];
  const a = cuda.alloc(m * k * batch * e, { stream }).fill(0);
  const b = cuda.alloc(k * n * batch * e, { stream }).fill(0);
  const c = cuda.alloc(m * n * batch * e, { stream });
  const o = { m, n, k, batch, dtype, compute: comp, stream };
  compute.matmul(a, b, c, o);
  const start = new compute.Event({ timing: true }).record(stream);
  for (let i = 0; i < reps; i++) compute.matmul(a, b, c, o);
  const end = new compute.Event({ timing: true }).record(stream);
  await end.done();
  const ms = start.elapsedTime(end) / reps;
  rows.push({ m, n, k, batch, dtype, compute: comp, ms: +ms.toFixed(4), tflops: +((2 * m * n * k * batch) / (ms * 1e-3) / 1e12).toFixed(2) });
  for (const x of [a, b, c, start, end]) (x.free ?? x.destroy).call(x);
}
console.log(JSON.stringify({ device: cuda.deviceName(), cublas: compute.blasInfo().version, reps, rows }, null, 1));
