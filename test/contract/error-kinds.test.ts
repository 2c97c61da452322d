// Every kind of native error has its JS class, and no JS class waits for a kind the addon
// never sends: native/common/errors.h's CCA_ERROR_KINDS and lib/errors.ts's table are
// the same list. Each kind arrives as its class, with its code.
import { describe, expect, it } from 'vitest';
import {
  AllocatorError, CudaOutOfMemoryError, DeviceError, ERROR_CLASS_BY_KIND, InvalidArgumentError, InvalidPointerError,
  errorFromNative,
} from '../../lib/errors.js';
import { native } from '../../lib/native.js';

describe('native error kinds', () => {
  it('are the kinds lib/errors.ts has classes for', () => {
    expect(Object.keys(ERROR_CLASS_BY_KIND).sort()).toEqual([...native.errorKinds()].sort());
  });

  it('each becomes its class, keeping the code', () => {
    const classes: Record<string, new (...args: never[]) => Error> = {
      allocator: AllocatorError, argument: InvalidArgumentError, pointer: InvalidPointerError, device: DeviceError,
      oom: CudaOutOfMemoryError,
    };
    for (const kind of native.errorKinds()) {
      const e = errorFromNative(kind, 'm', kind === 'oom' ? 'ERR_CUDA_OUT_OF_MEMORY' : 'ERR_X', { requested: 1 });
      expect(e, kind).toBeInstanceOf(classes[kind]!);
      expect((e as Error & { code: string }).code, kind).toBe(kind === 'oom' ? 'ERR_CUDA_OUT_OF_MEMORY' : 'ERR_X');
    }
  });

  it('crosses from the addon as its class', () => {
    expect(() => native.checkAllocatorSettings('bogus:1')).toThrow(InvalidArgumentError);
    expect(() => native.free(0, 12345, 0)).toThrow(InvalidPointerError);
  });
});

// Issue 43: pinned host memory the system refuses is an out-of-memory error of its own code
// (the native side: test/native/host_allocator_test.cpp), still a CudaOutOfMemoryError, so
// `instanceof` catches both as torch.OutOfMemoryError does; `device` is -1.
describe('an out-of-memory error of pinned host memory', () => {
  it('keeps its code and its numbers through the error factory', () => {
    const e = errorFromNative('oom', 'Pinned host memory out of memory. Tried to allocate 4.00 MiB', 'ERR_CCA_HOST_OUT_OF_MEMORY',
      { device: -1, requested: 3 << 20, allocSize: 4 << 20 });
    expect(e).toBeInstanceOf(CudaOutOfMemoryError);
    expect(e).toMatchObject({ code: 'ERR_CCA_HOST_OUT_OF_MEMORY', device: -1, allocSize: 4 << 20 });
    expect(errorFromNative('oom', 'CUDA out of memory.', 'ERR_CUDA_OUT_OF_MEMORY', { device: 0 })).toMatchObject({ code: 'ERR_CUDA_OUT_OF_MEMORY' });
  });
});
