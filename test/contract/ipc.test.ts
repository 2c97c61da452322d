// CUDA IPC between two processes (test/conformance/js-ipc.mjs) on the cuda backend over
// the fake driver, whose memory is memfd pages both processes really map; the same script
// runs on a GPU in bench/gpu/run-on-gpu.sh. On the simulator sharing is refused with a code.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cuda } from '../../lib/index.js';
import { freshSim } from '../support/helpers.js';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../conformance/js-ipc.mjs', import.meta.url));
const built = existsSync(fileURLToPath(new URL('../../dist/index.js', import.meta.url)));

describe.skipIf(!built || !existsSync(FAKE))('CUDA IPC on the fake driver', () => {
  it('shares bytes with a child process, keeps memory while it is open, and refuses bad handles', () => {
    const out = execFileSync(process.execPath, [SCRIPT], {
      encoding: 'utf8',
      env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, FAKE_CUDA_CAPACITY_MB: '256' },
    });
    expect(out).toMatch(/\n6 passed, 0 failed\n$/);
  });
});

describe('CUDA IPC on the simulator', () => {
  it('is refused with a code, and the buffer frees as usual', () => {
    freshSim();
    const buf = cuda.alloc(4096);
    expect(() => buf.ipcHandle()).toThrow(expect.objectContaining({ code: 'ERR_CCA_IPC_UNSUPPORTED' }));
    expect(buf.imported).toBe(false);
    buf.free();
    expect(cuda.ipc_collect()).toBe(0);
  });
});
