import { expect } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { resetMemoryMetadata } from '../../lib/history/metadata.js';

export const KiB = 1024;
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/** Fresh simulated devices for each test. */
export function freshSim(options: { devices?: number; capacityBytes?: number } = {}): void {
  cuda.sim.configure(options);
}

/** Fresh simulated devices with history off: the start of each PyTorch-parity test. */
export function freshParityState(): void {
  freshSim();
  memory._record_memory_history(null);
}

/** What parity tests may leave behind that outlives the runtime: the label, caching off. */
export function restoreParityState(): void {
  resetMemoryMetadata();
  memory.caching_allocator_enable(true);
}

export function expectValid(device = 0): void {
  expect(memory.check_invariants(device)).toBeNull();
}

/**
 * Runs `bad`, which must throw an error of `cls` with `code`, and checks the allocator
 * is exactly as before: every stat equal, every invariant holding.
 */
export function expectRejectedUnchanged(
  bad: () => unknown,
  cls: abstract new (...args: never[]) => Error,
  code: string,
  devices = [0],
): Error {
  const before = devices.map((d) => memory.memory_stats(d));
  let caught: unknown;
  try {
    bad();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected an error').toBeInstanceOf(cls);
  expect((caught as { code?: string }).code).toBe(code);
  expect((caught as Error).message.length).toBeGreaterThan(10);
  devices.forEach((d, i) => {
    expect(memory.memory_stats(d)).toEqual(before[i]);
    expectValid(d);
  });
  return caught as Error;
}
