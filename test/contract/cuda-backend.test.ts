// The cuda backend through the JS API, on our fake driver (built by the C++ tests; no GPU
// needed). The backend is chosen per process, so each case runs in a child process.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cuda } from '../../lib/index.js';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const ENTRY = new URL('../../dist/index.js', import.meta.url).href;
const haveFake = existsSync(FAKE) && existsSync(fileURLToPath(ENTRY));

function run(script: string, env: Record<string, string>): unknown {
  const code = `import * as cca from ${JSON.stringify(ENTRY)};\nconst { cuda, memory } = cca;\nconst out = await (async () => {${script}})();\nconsole.log(JSON.stringify(out));`;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('backend choice', () => {
  it('sim where there is no driver, saying why; the addon loads regardless', () => {
    const p = cuda.probe();
    expect(typeof p.available).toBe('boolean');
    if (!p.available) expect(p.reason).toMatch(/no CUDA driver|no GPU|cuInit/);
    const out = run('return [cuda.runtimeInfo(), cuda.isAvailable()];', { CCA_DEVICE: 'auto', CCA_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' }) as any[];
    expect(out[0].backend).toBe('sim');
    expect(out[0].note).toMatch(/no CUDA driver: \/nonexistent\/libcuda\.so\.1 could not be loaded/);
    expect(out[1]).toBe(false);
  });

  it('CCA_DEVICE=cuda without a driver is a clear DeviceError, not a crash', () => {
    const out = run(`try { cuda.alloc(10); return 'allocated'; } catch (e) { return [e.name, e.code, e.message]; }`,
      { CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: '/nonexistent/libcuda.so.1' }) as string[];
    expect(out[0]).toBe('DeviceError');
    expect(out[1]).toBe('ERR_CCA_DEVICE');
    expect(out[2]).toMatch(/no CUDA driver.*use the sim backend/);
  });
});

// The same JS conformance script runs here on the sim and the fake driver, and on a real
// GPU through bench/gpu/run-on-gpu.sh.
const SCRIPT = fileURLToPath(new URL('../conformance/js-backend.mjs', import.meta.url));
function conformance(env: Record<string, string>): string {
  return execFileSync(process.execPath, [SCRIPT], { encoding: 'utf8', env: { ...process.env, ...env } });
}

describe.skipIf(!existsSync(fileURLToPath(ENTRY)))('JS conformance script', () => {
  it('passes on the sim', () => {
    expect(conformance({ CCA_DEVICE: 'sim', CCA_EXPECT_BACKEND: 'sim' })).toMatch(/\n8 passed, 0 failed\n$/);
  });
  it.skipIf(!haveFake)('passes on the cuda backend over the fake driver', () => {
    expect(conformance({ CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, FAKE_CUDA_CAPACITY_MB: '1024' }))
      .toMatch(/\n8 passed, 0 failed\n$/);
  });
});

describe.skipIf(!haveFake)('cuda backend on the fake driver', () => {
  const env = { CCA_DEVICE: 'auto', CCA_LIBCUDA_PATH: FAKE, FAKE_CUDA_CAPACITY_MB: '64', FAKE_CUDA_DEVICES: '2' };

  it('is chosen by auto, allocates, copies round-trip, and fills', () => {
    const out = run(`
      const info = cuda.runtimeInfo();
      const b = cuda.alloc(4096);
      const src = new Float32Array(1024).map((_, i) => i * 0.5);
      b.copyFrom(src);
      const back = b.copyTo(new Float32Array(1024));
      const part = b.fill(7, 16, 4).copyTo(new Uint8Array(24));
      const props = cuda.getDeviceProperties(1);
      b.free();
      return { info, same: back.every((v, i) => v === src[i]), part: Array.from(part.slice(12, 24)), props,
               simulated: cuda.isSimulated(), reserved: memory.memory_reserved(), count: cuda.deviceCount() };`, env) as any;
    expect(out.info.backend).toBe('cuda');
    expect(out.info.note).toMatch(/2 GPU\(s\) found/);
    expect(out.same).toBe(true);
    expect(out.part.slice(4, 8)).toEqual([7, 7, 7, 7]);
    expect(out.simulated).toBe(false);
    expect(out.props.name).toMatch(/Fake CUDA Device 1/);
    expect(out.props).toMatchObject({ major: 9, minor: 0, simulated: false });
    expect(out.reserved).toBe(2 * 1024 * 1024);
    expect(out.count).toBe(2);
  });

  it('a driver OOM goes through release-and-retry, then the error with the device numbers', () => {
    const out = run(`
      const s = cuda.Stream.create();
      cuda.alloc(40 << 20, { stream: s }).free();
      const a = cuda.alloc(40 << 20);
      const retries = memory.memory_stats().num_alloc_retries;
      try { cuda.alloc(30 << 20); } catch (e) { return { retries, name: e.name, total: e.deviceTotal, free: e.deviceFree, msg: e.message }; }`, env) as any;
    expect(out.retries).toBe(1);
    expect(out.name).toBe('CudaOutOfMemoryError');
    expect(out.total).toBe(64 * 2 ** 20);
    expect(out.free).toBe(24 * 2 ** 20);
    expect(out.msg).toMatch(/^CUDA out of memory\. Tried to allocate 30\.00 MiB\. GPU 0 has a total capacity of 64\.00 MiB/);
    expect(out.msg).not.toMatch(/simulated/);
  });

  it('history and snapshots work the same on the cuda backend', () => {
    const out = run(`
      memory._record_memory_history({ enabled: 'all', context: 'alloc' });
      const b = cuda.alloc(1000, { tag: 't' });
      const s = memory._snapshot();
      b.free();
      return { actions: s.device_traces[0].map((e) => e.action), seg: s.segments[0].blocks[0].state, tag: s.device_traces[0][1].user_metadata };`, env) as any;
    expect(out.actions).toEqual(['segment_alloc', 'alloc']);
    expect(out.seg).toBe('active_allocated');
    expect(out.tag).toBe('t');
  });
});
