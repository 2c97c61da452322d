// The C ABI from a consumer addon in C (test/interop/consumer.c, compiled against the
// packaged header by test/conformance/js-interop.mjs): on the simulator, and on the cuda
// backend over the fake driver, where the consumer also adopts a stream it made and calls
// in a context of its own. The same script runs on a GPU in bench/gpu/run-on-gpu.sh.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../conformance/js-interop.mjs', import.meta.url));
const built = existsSync(fileURLToPath(new URL('../../dist/index.js', import.meta.url)));
// One consumer build for both runs.
const consumerDir = mkdtempSync(join(tmpdir(), 'cca-consumer-'));

function conformance(env: Record<string, string>): string {
  return execFileSync(process.execPath, [SCRIPT], {
    encoding: 'utf8',
    env: { ...process.env, CCA_CONSUMER_DIR: consumerDir, ...env },
  });
}

describe.skipIf(!built)('a C consumer of the C ABI', () => {
  it('passes on the simulator, having said it accepts simulated memory', () => {
    expect(conformance({ CCA_DEVICE: 'sim' })).toMatch(/\n11 passed, 0 failed\n$/);
  });
  it.skipIf(!existsSync(FAKE))('passes on the cuda backend over the fake driver, own stream and context included', () => {
    expect(conformance({ CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, FAKE_CUDA_CAPACITY_MB: '1024' }))
      .toMatch(/\n13 passed, 0 failed\n$/);
  });
});
