// The layer kernel the MLP examples share: y = x (rows x in) * w (in x out) + b, then
// max(0, .) when relu, compiled with NVRTC.
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
