// Kernels through the JS API on the cuda backend over the fake driver and the fake NVRTC
// (both built by the C++ tests; no GPU needed). The backend is chosen per process, so each
// case runs in a child process. The same conformance script runs on a real GPU in
// bench/gpu/run-on-gpu.sh.
import { execFileSync } from 'node:child_process';
import { ENTRY, runScript } from '../support/child-script.js';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const FAKE_NVRTC = fileURLToPath(new URL('../../build-tests/libfakenvrtc.so', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../conformance/js-kernels.mjs', import.meta.url));
const ready = existsSync(FAKE) && existsSync(FAKE_NVRTC) && existsSync(fileURLToPath(ENTRY));
const env = { CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, CCA_NVRTC_PATH: FAKE_NVRTC, FAKE_CUDA_CAPACITY_MB: '256' };

function run(script: string, extra: Record<string, string> = {}): any {
  return runScript('const { cuda, compute, memory } = cca;', script, { ...env, ...extra });
}

// Calls each line of `calls` and returns [code, message] for each (null when it did not throw).
const attempts = (setup: string, calls: string[]) => `${setup}
  const out = [];
  for (const call of [${calls.map((c) => `() => { ${c} }`).join(',\n')}]) {
    try { await call(); out.push(null); } catch (e) { out.push([e.code, e.message]); }
  }
  out.push(memory.check_invariants());
  return out;`;

const MODULE = `const m = compute.Module.load('FAKECUBIN\\nsaxpy\\nfill_u32\\nfill_u64\\naffine\\n');
  const saxpy = m.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'u32']);
  const fill64 = m.getKernel('fill_u64', ['ptr', 'u64', 'u32']);
  const affine = m.getKernel('affine', [{ struct: { size: 8, align: 4 } }, 'ptr', 'u32']);
  const x = cuda.alloc(64), y = cuda.alloc(64);`;

describe.skipIf(!ready)('compute on the fake driver', () => {
  it('passes the kernel conformance script (the one the GPU runner runs)', () => {
    const out = execFileSync(process.execPath, [SCRIPT], { encoding: 'utf8', env: { ...process.env, ...env } });
    expect(out).toMatch(/\n15 passed, 0 failed\n$/);
    expect(out).toContain(`(NVRTC 13.0 at ${FAKE_NVRTC})`);
  });

  it('refuses bad launches with a code that names the argument and the fix, changing nothing', () => {
    const out = run(attempts(MODULE, [
      'saxpy.launch({ grid: 1, block: 16 }, 2, x, y);',
      'saxpy.launch({ grid: 1, block: 16 }, 2, x, y, 2 ** 32);',
      'saxpy.launch({ grid: 1, block: 16 }, 2, x, y, 1.5);',
      'saxpy.launch({ grid: 1, block: 16 }, 2, x, y, 16n);',
      'saxpy.launch({ grid: 1, block: 16 }, 2, x.ptr, y, 16);',
      'fill64.launch({ grid: 1, block: 16 }, x, 7, 8);',
      'fill64.launch({ grid: 1, block: 16 }, x, 2n ** 64n, 8);',
      'affine.launch({ grid: 1, block: 16 }, new Float32Array(3), y, 16);',
      'saxpy.launch({ grid: 0, block: 16 }, 2, x, y, 16);',
      'saxpy.launch({ grid: 1, block: [16, 16, 16] }, 2, x, y, 16);',
      'saxpy.launch({ grid: 1, blocks: 16 }, 2, x, y, 16);',
      'saxpy.launch(null, 2, x, y, 16);',
      'const z = cuda.alloc(64); z.free(); saxpy.launch({ grid: 1, block: 16 }, 2, z, y, 16);',
      'saxpy.launch({ grid: 1, block: 16 }, 2, x.view(65), y, 16);',
      'const s = cuda.Stream.create(); const z = cuda.alloc(64, { stream: s }); saxpy.launch({ grid: 1, block: 16 }, 2, z, y, 16);',
      'const w = cuda.alloc(64, { device: 1 }); saxpy.launch({ grid: 1, block: 16 }, 2, w, y, 16);',
      'm.getKernel("saxpy", ["f32", "ptr", "ptr"]);',
      'm.getKernel("saxpy", ["f32", "pointer", "ptr", "u32"]);',
      'compute.Module.load("FAKECUBIN\\nnot_a_kernel\\n");',
      'compute.Module.load(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 1, 2]));',
    ]), { FAKE_CUDA_DEVICES: '2' }) as ([string, string] | null | string)[];
    const codes = out.slice(0, -1).map((r) => (r as [string, string] | null)?.[0]);
    expect(codes).toEqual([
      'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_TYPE',
      'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_VALUE',
      'ERR_CCA_LAUNCH_CONFIG', 'ERR_CCA_LAUNCH_CONFIG', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE',
      'ERR_CCA_INVALID_POINTER', 'ERR_INVALID_ARG_VALUE', 'ERR_CCA_LAUNCH_STREAM', 'ERR_CCA_DEVICE_MISMATCH',
      'ERR_CCA_KERNEL_SIGNATURE', 'ERR_INVALID_ARG_TYPE', 'ERR_CCA_INVALID_MODULE', 'ERR_CCA_INVALID_MODULE',
    ]);
    const messages = out.slice(0, -1).map((r) => (r as [string, string])[1]);
    expect(messages[0]).toMatch(/saxpy takes 4 arguments \(f32, ptr, ptr, u32\) but received 3/);
    expect(messages[1]).toMatch(/argument 3 \(u32\) of saxpy/);
    expect(messages[3]).toMatch(/32-bit or narrower parameter takes a number/);
    expect(messages[4]).toMatch(/raw addresses are not accepted/);
    expect(messages[5]).toMatch(/write 7n/);
    expect(messages[9]).toMatch(/4096 threads, beyond device 0's limit of 1024/);
    expect(messages[10]).toMatch(/Unknown option "blocks" in launch config.*did you mean "block"/);
    expect(messages[14]).toMatch(/give config.stream/);
    expect(messages[16]).toMatch(/takes 4 parameters but 3 types were given/);
    expect(messages[18]).toMatch(/CUDA_ERROR_INVALID_IMAGE/);
    expect(out.at(-1)).toBeNull();  // the invariants hold after all of it
  });

  it('a view passes its own address; the buffer behind it is what is checked', () => {
    const out = run(`${MODULE}
      const b = cuda.alloc(16 * 8).fill(0);
      fill64.launch({ grid: 1, block: 4 }, b.view(4 * 8, 4 * 8), 9n, 4);
      return [...b.copyTo(new BigUint64Array(16))].map(Number);`) as number[];
    expect(out).toEqual([0, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('compile errors carry the log; options reach NVRTC; a missing NVRTC says where it looked', () => {
    const out = run(`
      const r = [];
      try { await compute.compile('#include "missing.h"\\n', { name: 'k.cu' }); } catch (e) { r.push([e.name, e.code, e.log]); }
      try { await compute.compile('FAKE_REQUIRE_DEFINE(N)\\n'); } catch (e) { r.push([e.code]); }
      const p = await compute.compile('FAKE_REQUIRE_DEFINE(N)\\n', { defines: { N: 4, FAST: true, SLOW: false }, options: ['-lineinfo'] });
      r.push([p.target, p.arch, p.log]);
      const ptx = await compute.compile('', { arch: 'compute_80' });
      r.push([ptx.target, ptx.arch]);
      try { await compute.compile('', { arch: 'sm_50' }); } catch (e) { r.push([e.code, e.log]); }
      return r;`) as string[][];
    expect(out[0]).toEqual(['CompileError', 'ERR_CCA_COMPILE', expect.stringContaining('k.cu(1): error: cannot open source file "missing.h"')]);
    expect(out[1]).toEqual(['ERR_CCA_COMPILE']);
    expect(out[2]).toEqual(['cubin', 'sm_90', 'options: --gpu-architecture=sm_90 -DN=4 -DFAST -lineinfo\n']);
    expect(out[3]).toEqual(['ptx', 'compute_80']);
    expect(out[4]).toEqual(['ERR_CCA_COMPILE', expect.stringContaining('invalid value for --gpu-architecture')]);
    const missing = run(`try { await compute.compile(''); } catch (e) { return [e.code, e.message, compute.compilerInfo().available]; }`,
      { CCA_NVRTC_PATH: '/nonexistent/libnvrtc.so.13' }) as [string, string, boolean];
    expect(missing[0]).toBe('ERR_CCA_NVRTC_UNAVAILABLE');
    expect(missing[1]).toMatch(/tried \/nonexistent\/libnvrtc\.so\.13 .*set CCA_NVRTC_PATH/);
    expect(missing[2]).toBe(false);
  });

  it('unloading a module makes its kernels refuse; the runtime replaced makes them stale', () => {
    const out = run(`${MODULE}
      m.unload();
      const r = [];
      try { saxpy.launch({ grid: 1, block: 1 }, 1, x, y, 1); } catch (e) { r.push(e.code); }
      try { m.unload(); } catch (e) { r.push(e.code); }
      const m2 = compute.Module.load('FAKECUBIN\\nsaxpy\\n');
      cuda.sim.configure();
      try { m2.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'u32']); } catch (e) { r.push(e.code, /replaced/.test(e.message)); }
      return r;`) as string[];
    expect(out).toEqual(['ERR_CCA_INVALID_HANDLE', 'ERR_CCA_INVALID_HANDLE', 'ERR_CCA_INVALID_HANDLE', true]);
  });
});
