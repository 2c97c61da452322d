// Every public function validates before any native call: bad input gets an error with a
// stable code naming the value, and the allocator is exactly as before.
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ArgumentRangeError,
  ArgumentTypeError,
  CudaOutOfMemoryError,
  DeviceError,
  InvalidArgumentError,
  InvalidPointerError,
  Stream,
  cuda,
  memory,
} from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { MiB, expectRejectedUnchanged as rejected, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim({ devices: 2 }));

const live = () => {
  const keep = cuda.alloc(4096);
  const side = Stream.create();
  return { keep, side };
};

describe('sizes', () => {
  it.each([
    [-1, ArgumentRangeError, 'ERR_INVALID_ARG_VALUE'],
    [1.5, ArgumentRangeError, 'ERR_INVALID_ARG_VALUE'],
    [NaN, ArgumentRangeError, 'ERR_INVALID_ARG_VALUE'],
    [Infinity, ArgumentRangeError, 'ERR_INVALID_ARG_VALUE'],
    ['100', ArgumentTypeError, 'ERR_INVALID_ARG_TYPE'],
    [100n, ArgumentTypeError, 'ERR_INVALID_ARG_TYPE'],
    [null, ArgumentTypeError, 'ERR_INVALID_ARG_TYPE'],
    [undefined, ArgumentTypeError, 'ERR_INVALID_ARG_TYPE'],
    [{}, ArgumentTypeError, 'ERR_INVALID_ARG_TYPE'],
  ] as const)('alloc(%s) is refused', (size, cls, code) => {
    live();
    const err = rejected(() => cuda.alloc(size as never), cls, code, [0, 1]);
    expect(err.message).toMatch(/^Expected a size in bytes .* for size but received/);
  });

  it('names the received value and its type', () => {
    expect(() => cuda.alloc(-3)).toThrow('Expected a size in bytes (a non-negative integer) for size but received -3 of type number; sizes cannot be negative');
    expect(() => cuda.alloc('12' as never)).toThrow('received "12" of type string');
  });

  it('a huge size is an out-of-memory error that touches nothing', () => {
    live();
    rejected(() => cuda.alloc(2 ** 60), CudaOutOfMemoryError, 'ERR_CUDA_OUT_OF_MEMORY', [0, 1]);
    rejected(() => cuda.alloc(2 ** 70), CudaOutOfMemoryError, 'ERR_CUDA_OUT_OF_MEMORY', [0, 1]);
    expect(memory.memory_stats().num_ooms).toBe(0);
  });

  it('a request larger than the device is a normal OOM and the cache survives', () => {
    const { keep } = live();
    expect(() => cuda.alloc(17 * 1024 * MiB)).toThrow(CudaOutOfMemoryError);
    expect(memory.check_invariants()).toBeNull();
    keep.free();
  });
});

describe('pointers and buffers', () => {
  it('double free is an InvalidPointerError and changes nothing', () => {
    live();
    const b = cuda.alloc(1000);
    b.free();
    rejected(() => b.free(), InvalidPointerError, 'ERR_CCA_INVALID_POINTER', [0, 1]);
    rejected(() => cuda.recordStream(b, Stream.create()), InvalidPointerError, 'ERR_CCA_INVALID_POINTER');
  });

  it('a foreign, interior or already freed pointer is refused by the native layer too', () => {
    const { keep } = live();
    rejected(() => native.free(0, 0x1234000), InvalidPointerError, 'ERR_CCA_INVALID_POINTER', [0, 1]);
    rejected(() => native.free(0, keep.ptr + 512), InvalidPointerError, 'ERR_CCA_INVALID_POINTER', [0, 1]);
    rejected(() => native.free(1, keep.ptr), InvalidPointerError, 'ERR_CCA_INVALID_POINTER', [0, 1]);
    rejected(() => native.free(0, -5), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => native.alloc(0, 1.5, 0), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => native.alloc('x' as never, 1, 0), InvalidArgumentError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
    rejected(() => native.alloc(5, 1, 0), InvalidArgumentError, 'ERR_CCA_INVALID_DEVICE', [0, 1]);
  });

  it('allocInSlots refuses bad numbers in its slots as alloc refuses bad arguments', () => {
    live();
    const slots = native.callSlots();
    const slotted = (...numbers: number[]) => () => {
      slots.set([0, 4096, 0, 0, 0]);
      slots.set(numbers);
      native.allocInSlots();
    };
    rejected(slotted(0, 1.5), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(slotted(0, NaN), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(slotted(-1), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(slotted(5), InvalidArgumentError, 'ERR_CCA_INVALID_DEVICE', [0, 1]);
    rejected(slotted(0, 4096, 0.5), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(slotted(0, 4096, 12345), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
    rejected(slotted(0, 4096, 0, -2), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(slotted(0, 4096, 0, 0, 2 ** 32), InvalidArgumentError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
  });

  it('recordStream needs a DeviceBuffer and a Stream of the same device', () => {
    const { keep } = live();
    const other = Stream.create({ device: 1 });
    rejected(() => cuda.recordStream(keep, other), InvalidArgumentError, 'ERR_CCA_DEVICE_MISMATCH', [0, 1]);
    rejected(() => cuda.recordStream({ ptr: keep.ptr } as never, Stream.create()), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE');
    rejected(() => cuda.recordStream(keep, 7 as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE');
  });

  it('a buffer from a replaced runtime is stale', () => {
    const b = cuda.alloc(1000);
    freshSim();
    cuda.alloc(1000);  // same fake address in the new runtime
    rejected(() => b.free(), InvalidPointerError, 'ERR_CCA_INVALID_POINTER');
    expect(memory.memory_allocated()).toBe(1024);
  });
});

describe('streams', () => {
  it('a destroyed stream is refused everywhere', () => {
    const { keep } = live();
    const s = Stream.create();
    s.destroy();
    rejected(() => cuda.alloc(100, { stream: s }), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
    rejected(() => cuda.recordStream(keep, s), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
    rejected(() => s.synchronize(), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
    rejected(() => s.destroy(), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
    rejected(() => native.alloc(0, 100, s.handle), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
    rejected(() => cuda.defaultStream().destroy(), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
  });

  it('a stream of another device, or a wrong stream type, is refused', () => {
    live();
    const s1 = Stream.create({ device: 1 });
    rejected(() => cuda.alloc(100, { stream: s1, device: 0 }), InvalidArgumentError, 'ERR_CCA_DEVICE_MISMATCH', [0, 1]);
    rejected(() => cuda.alloc(100, { stream: 0 as never }), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
    rejected(() => native.alloc(0, 100, s1.handle), InvalidArgumentError, 'ERR_CCA_INVALID_STREAM', [0, 1]);
  });
});

describe('options, devices and settings', () => {
  it('unknown option keys are refused with a hint', () => {
    live();
    const err = rejected(() => cuda.alloc(100, { strem: 1 } as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
    expect(err.message).toContain('did you mean "stream"');
    rejected(() => cuda.alloc(100, 5 as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
  });

  it.each([[-1], [2], [0.5], ['0'], [NaN]])('device %s is refused', (device) => {
    live();
    const cls = typeof device === 'number' ? ArgumentRangeError : ArgumentTypeError;
    const code = typeof device === 'number' ? 'ERR_INVALID_ARG_VALUE' : 'ERR_INVALID_ARG_TYPE';
    rejected(() => cuda.alloc(100, { device: device as never }), cls, code, [0, 1]);
    rejected(() => memory.memory_allocated(device as never), cls, code, [0, 1]);
    rejected(() => memory.empty_cache(device as never), cls, code, [0, 1]);
    rejected(() => cuda.setDevice(device as never), cls, code, [0, 1]);
  });

  it.each([[-0.1], [1.1], [NaN], ['0.5']])('memory fraction %s is refused', (f) => {
    live();
    const cls = typeof f === 'number' ? ArgumentRangeError : ArgumentTypeError;
    rejected(() => memory.set_per_process_memory_fraction(f as never), cls, typeof f === 'number' ? 'ERR_INVALID_ARG_VALUE' : 'ERR_INVALID_ARG_TYPE', [0, 1]);
  });

  it('an unknown config key is refused with PyTorch\'s message and changes nothing', () => {
    live();
    memory._set_allocator_settings('max_split_size_mb:64');
    const err = rejected(() => memory._set_allocator_settings('max_split_size_mb:32,bogus:1'), InvalidArgumentError, 'ERR_CCA_INVALID_CONFIG', [0, 1]);
    expect(err.message).toContain("Unrecognized key 'bogus' in CUDA allocator config.");
    expect(memory.memory_stats().max_split_size).toBe(64 * MiB);
    rejected(() => memory._set_allocator_settings('expandable_segments:yes'), InvalidArgumentError, 'ERR_CCA_INVALID_CONFIG', [0, 1]);
    rejected(() => memory._set_allocator_settings(42 as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
  });

  it('summary and simulator controls validate too', () => {
    live();
    rejected(() => memory.memory_summary(0, 'yes' as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
    rejected(() => cuda.sim.failNextMallocs(-1), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => cuda.sim.holdStream({} as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
    rejected(() => cuda.sim.configure({ devices: 0 }), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => Stream.create({ device: 9 }), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
  });

  it('a failing event query is a DeviceError that changes nothing', () => {
    const side = Stream.create();
    cuda.sim.holdStream(side);
    const p = cuda.alloc(4096);
    cuda.recordStream(p, side);
    p.free();
    cuda.sim.failNextEventQueries(1);
    rejected(() => cuda.alloc(4096), DeviceError, 'ERR_CCA_DEVICE', [0, 1]);
  });
});

describe('copies', () => {
  it('out of bounds, wrong types and freed buffers are refused and change nothing', () => {
    const b = cuda.alloc(1024);
    rejected(() => b.copyFrom(new Uint8Array(1025)), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => b.copyFrom(new Uint8Array(1000), 100), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => b.copyTo(new Float64Array(129)), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => b.copyFrom([1, 2, 3] as never), ArgumentTypeError, 'ERR_INVALID_ARG_TYPE', [0, 1]);
    rejected(() => b.copyFrom(new Uint8Array(4), -1), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => b.fill(256), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    rejected(() => b.fill(1, 1000, 100), ArgumentRangeError, 'ERR_INVALID_ARG_VALUE', [0, 1]);
    const data = new Uint8Array(1024).map((_, i) => i & 0xff);
    expect(b.copyFrom(data).copyTo(new Uint8Array(1024))).toEqual(data);
    b.free();
    rejected(() => b.copyTo(new Uint8Array(4)), InvalidPointerError, 'ERR_CCA_INVALID_POINTER', [0, 1]);
    rejected(() => b.fill(0), InvalidPointerError, 'ERR_CCA_INVALID_POINTER', [0, 1]);
  });
});
