// Copies and fills reach device memory only inside a live allocation, within the caller's
// size: the allocator checks under its lock, so the raw addon refuses a forged range too,
// not only the TypeScript wrapper. Buffers and streams cannot be made by hand.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { DeviceBuffer, InvalidArgumentError, InvalidPointerError, Stream, cuda } from '../../lib/index.js';
import { ArgumentTypeError } from '../../lib/errors.js';
import { native } from '../../lib/native.js';
import { KiB, expectRejectedUnchanged, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

describe('the addon refuses ranges outside live allocations', () => {
  it('past the end, from a bad offset, or into the rounding beyond the caller\'s size', () => {
    const live = cuda.alloc(4 * KiB);
    const odd = cuda.alloc(1000);  // a 1024-byte block: bytes 1000.. are not the caller's
    const big = new Uint8Array(1 << 20);
    const cases: [string, () => unknown][] = [
      ['read 1 MiB from a 4 KiB block', () => native.copyDtoH(0, live.ptr, 0, big)],
      ['write 1 MiB into a 4 KiB block', () => native.copyHtoD(0, live.ptr, 0, big)],
      ['one byte past the end', () => native.copyDtoH(0, live.ptr, 4 * KiB, new Uint8Array(1))],
      ['an offset far beyond', () => native.copyHtoD(0, live.ptr, 2 ** 40, new Uint8Array(1))],
      ['fill past the end', () => native.fill(0, live.ptr, 4095, 7, 2)],
      ['fill the rounding tail', () => native.fill(0, odd.ptr, 1000, 0, 24)],
      ['read the rounding tail', () => native.copyDtoH(0, odd.ptr, 0, new Uint8Array(1024))],
    ];
    for (const [what, bad] of cases) {
      const e = expectRejectedUnchanged(bad, InvalidArgumentError, 'ERR_CCA_OUT_OF_BOUNDS');
      expect(e.message, what).toMatch(/outside the allocation at 0x[0-9a-f]+ of (4096|1000) bytes/);
    }
    // What is the caller's still works.
    native.fill(0, odd.ptr, 0, 9, 1000);
    expect(live.fill(1).copyTo(new Uint8Array(4 * KiB)).every((v) => v === 1)).toBe(true);
  });

  it('at addresses that are not live allocations: freed, interior, foreign, null', () => {
    const a = cuda.alloc(8 * KiB);
    const freed = cuda.alloc(8 * KiB);
    const freedPtr = freed.ptr;
    freed.free();
    const cases: [string, () => unknown][] = [
      ['write to a freed block', () => native.copyHtoD(0, freedPtr, 0, new Uint8Array(16))],
      ['read a freed block', () => native.copyDtoH(0, freedPtr, 0, new Uint8Array(16))],
      ['fill a freed block', () => native.fill(0, freedPtr, 0, 1, 16)],
      ['an interior pointer', () => native.copyDtoH(0, a.ptr + 512, 0, new Uint8Array(16))],
      ['a foreign address', () => native.copyDtoH(0, 0x1234_5600, 0, new Uint8Array(16))],
      ['null', () => native.copyDtoH(0, 0, 0, new Uint8Array(16))],
    ];
    for (const [what, bad] of cases) {
      const e = expectRejectedUnchanged(bad, InvalidPointerError, 'ERR_CCA_INVALID_POINTER');
      expect(e.message, what).toMatch(/is not a live allocation on device 0/);
    }
    a.free();
  });

  it('raw arguments of the wrong kind', () => {
    const a = cuda.alloc(KiB);
    for (const bad of [
      () => native.copyDtoH(0, a.ptr, -1, new Uint8Array(1)),
      () => native.copyDtoH(0, a.ptr, 0.5, new Uint8Array(1)),
      () => native.fill(0, a.ptr, 0, 256, 1),
      () => native.fill(0, a.ptr, 0, 1, Number.NaN),
    ]) expectRejectedUnchanged(bad, InvalidArgumentError, 'ERR_INVALID_ARG_VALUE');
    expectRejectedUnchanged(() => (native.copyDtoH as (...a: unknown[]) => void)(0, a.ptr, 0, [1, 2]),
      InvalidArgumentError, 'ERR_INVALID_ARG_TYPE');
    a.free();
  });
});

describe('buffers and streams come only from the library', () => {
  it('DeviceBuffer and Stream cannot be constructed by hand', () => {
    const live = cuda.alloc(4 * KiB);
    const forge = () => new (DeviceBuffer as unknown as new (...a: unknown[]) => DeviceBuffer)(live.ptr, 1e9, cuda.defaultStream(), 1);
    expectRejectedUnchanged(forge, ArgumentTypeError, 'ERR_ILLEGAL_CONSTRUCTOR');
    const forgeStream = () => new (Stream as unknown as new (...a: unknown[]) => Stream)(0, 0xdead);
    expectRejectedUnchanged(forgeStream, ArgumentTypeError, 'ERR_ILLEGAL_CONSTRUCTOR');
    live.free();
  });

  it('objects with their prototypes are refused with a code, not a private-field TypeError', () => {
    const fakeBuf = Object.create(DeviceBuffer.prototype) as DeviceBuffer;
    const fakeStream = Object.create(Stream.prototype) as Stream;
    for (const bad of [
      () => fakeBuf.copyTo(new Uint8Array(4)),
      () => fakeBuf.copyFrom(new Uint8Array(4)),
      () => fakeBuf.fill(0),
      () => fakeBuf.free(),
      () => cuda.recordStream(fakeBuf, cuda.defaultStream()),
      () => cuda.alloc(16, { stream: fakeStream }),
      () => cuda.sim.holdStream(fakeStream),
      () => fakeStream.synchronize(),
    ]) expectRejectedUnchanged(bad, ArgumentTypeError, 'ERR_INVALID_ARG_TYPE');
  });

  it('the sim\'s stream controls refuse a handle that is not a live stream', () => {
    const s = cuda.Stream.create();
    const handle = s.handle;
    s.destroy();
    for (const bad of [
      () => native.simHoldStream(0, 0xdead, true),
      () => native.simCompleteStream(0, 0xdead),
      () => native.simHoldStream(0, handle, true),
    ]) expectRejectedUnchanged(bad, InvalidArgumentError, 'ERR_CCA_INVALID_STREAM');
  });
});

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const ENTRY = new URL('../../dist/index.js', import.meta.url).href;

describe.skipIf(!existsSync(FAKE))('on the cuda backend (fake driver)', () => {
  it('the same refusals, before the driver sees the address', () => {
    const code = `
      import * as cca from ${JSON.stringify(ENTRY)};
      import { createRequire } from 'node:module';
      const native = createRequire(import.meta.url)(${JSON.stringify(fileURLToPath(new URL('../../binding.cjs', import.meta.url)))});
      const a = cca.cuda.alloc(4096);
      const out = [];
      for (const f of [
        () => native.copyDtoH(0, a.ptr, 0, new Uint8Array(1 << 20)),
        () => native.fill(0, a.ptr + 512, 0, 1, 16),
        () => { const p = cca.cuda.alloc(4096); const ptr = p.ptr; p.free(); native.copyHtoD(0, ptr, 0, new Uint8Array(8)); },
      ]) { try { f(); out.push('accepted'); } catch (e) { out.push(e.code); } }
      a.copyFrom(new Uint8Array(4096).fill(5));
      out.push(a.copyTo(new Uint8Array(4096)).every((v) => v === 5));
      out.push(cca.cuda.runtimeInfo().backend);
      console.log(JSON.stringify(out));`;
    const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
      encoding: 'utf8', env: { ...process.env, CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, FAKE_CUDA_CAPACITY_MB: '64' },
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual([
      'ERR_CCA_OUT_OF_BOUNDS', 'ERR_CCA_INVALID_POINTER', 'ERR_CCA_INVALID_POINTER', true, 'cuda',
    ]);
  });
});
