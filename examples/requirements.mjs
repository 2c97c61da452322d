// What the examples that need a GPU check first: the cuda backend (and NVRTC, for those that
// compile a kernel). Elsewhere they print one line saying what is missing and exit 0, rather
// than ending in a stack trace.
// In your project, import from 'cuda-caching-allocator' instead of '../dist/index.js'.
import { compute, cuda } from '../dist/index.js';

/** Exits with one line naming what `example` needs, unless the cuda backend (and, with `nvrtc`, NVRTC) is here. */
export function requireCuda(example, { nvrtc = false } = {}) {
  if (cuda.runtimeInfo().backend !== 'cuda') {
    console.log(`${example}: needs the cuda backend (a GPU, or CCA_DEVICE=cuda with a driver); this machine runs the simulated GPU`);
    process.exit(0);
  }
  const info = nvrtc ? compute.compilerInfo() : { available: true };
  if (!info.available) {
    console.log(`${example}: needs NVRTC to compile its kernel (${info.reason})`);
    process.exit(0);
  }
}

