// Randomized operation sequences from JS (fast-check), with the invariants checked after
// every step. The C++ tests run 100k operations; this checks the same through N-API.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CudaOutOfMemoryError, Stream, cuda, memory, type DeviceBuffer } from '../../lib/index.js';
import { MiB, freshSim } from '../support/helpers.js';

type Op =
  | { kind: 'alloc'; size: number; stream: number; device: number }
  | { kind: 'free'; index: number }
  | { kind: 'record'; index: number; stream: number }
  | { kind: 'hold'; stream: number; held: boolean }
  | { kind: 'empty' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('alloc' as const), size: fc.oneof(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 1, max: 40 * MiB })), stream: fc.integer({ min: 0, max: 2 }), device: fc.integer({ min: 0, max: 1 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), index: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('record' as const), index: fc.nat(), stream: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('hold' as const), stream: fc.integer({ min: 1, max: 2 }), held: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('empty' as const) }) },
);

describe('random sequences through the JS API', () => {
  it('keep every invariant after every step', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        freshSim({ devices: 2, capacityBytes: 128 * MiB });
        const streams = [0, 1].map((d) => [cuda.defaultStream(d), Stream.create({ device: d }), Stream.create({ device: d })]);
        const live: DeviceBuffer[] = [];
        for (const o of ops) {
          if (o.kind === 'alloc') {
            try {
              live.push(cuda.alloc(o.size, { stream: streams[o.device]![o.stream]! }));
            } catch (e) {
              if (!(e instanceof CudaOutOfMemoryError)) throw e;
            }
          } else if (o.kind === 'free' && live.length > 0) {
            live.splice(o.index % live.length, 1)[0]!.free();
          } else if (o.kind === 'record' && live.length > 0) {
            const b = live[o.index % live.length]!;
            cuda.recordStream(b, streams[b.device]![o.stream]!);
          } else if (o.kind === 'hold') {
            for (const d of [0, 1]) cuda.sim.holdStream(streams[d]![o.stream]!, o.held);
          } else if (o.kind === 'empty') {
            memory.empty_cache();
          }
          expect(memory.check_invariants(0)).toBeNull();
          expect(memory.check_invariants(1)).toBeNull();
        }
        const held = live.reduce((n, b) => n + (b.ptr === 0 ? 0 : 1), 0);
        expect(memory.memory_stats(0)['allocation.all.current'] + memory.memory_stats(1)['allocation.all.current']).toBe(held);
      }),
      { numRuns: 60, seed: 42 },
    );
  });
});
