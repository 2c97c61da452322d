// The layer kernels the MLP examples share, compiled with NVRTC: a whole linear layer,
// y = x (rows x in) * w (in x out) + b, then max(0, .) when relu; and the bias and relu alone,
// for a layer whose product cuBLAS computes.
// In your project, import from 'cuda-caching-allocator' instead of '../dist/index.js'.
import { compute } from '../dist/index.js';

/** The `linear` kernel: (x, w, b, y, rows, in, out, relu), one thread per output element, one block row per input row. */
export async function linearKernel(name) {
  const program = await compute.compile(`
extern "C" __global__ void linear(const float* x, const float* w, const float* b, float* y,
                                  unsigned rows, unsigned in, unsigned out, unsigned relu) {
  unsigned r = blockIdx.y, o = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || o >= out) return;
  float acc = b[o];
  for (unsigned i = 0; i < in; ++i) acc += x[r * in + i] * w[i * out + o];
  y[r * out + o] = relu && acc < 0.f ? 0.f : acc;
}`, { name });
  return program.load().getKernel('linear', ['ptr', 'ptr', 'ptr', 'ptr', 'u32', 'u32', 'u32', 'u32']);
}

/** The epilogue after a cuBLAS GEMM: (y, b, rows, out, relu), y += b per row, then max(0, .) when relu. */
export async function biasReluKernel(name) {
  const program = await compute.compile(`
extern "C" __global__ void bias_relu(float* y, const float* b, unsigned rows, unsigned out, unsigned relu) {
  unsigned r = blockIdx.y, o = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || o >= out) return;
  float v = y[r * out + o] + b[o];
  y[r * out + o] = relu && v < 0.f ? 0.f : v;
}`, { name });
  return program.load().getKernel('bias_relu', ['ptr', 'ptr', 'u32', 'u32', 'u32']);
}

