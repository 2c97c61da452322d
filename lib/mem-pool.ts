// MemPool, mirroring torch.cuda.MemPool: a private pool on one device. Allocations made
// inside memory.use_mem_pool(pool, fn) come from it and go back to it; its snapshot shows
// only its segments; releasing it returns its cached memory once nothing uses it.
import { runScoped } from './scoped.js';
import { InvalidArgumentError } from './errors.js';
import { native } from './native.js';
import { resolveDevice } from './device.js';
import { generation } from './generation.js';
import { checkBoolean, checkOptions, typeError } from './validate.js';
import { segmentsOf } from './snapshot/build.js';
import { tuple } from './snapshot/tuple.js';
import type { Segment } from './snapshot/types.js';

export class MemPool {
  /** PyTorch's id: the tuple (0, n). */
  readonly id: number[];
  readonly device: number;
  #released = false;
  readonly #generation = generation();

  constructor(options?: { device?: number }) {
    const o = checkOptions<{ device: number }>('MemPool options', options, ['device']);
    this.device = resolveDevice(o.device, 'options.device');
    this.id = tuple(0, native.poolCreate(this.device));
  }

  /** True for a MemPool made with `new MemPool()` (not an object with its prototype). */
  static isMemPool(value: unknown): value is MemPool {
    return typeof value === 'object' && value !== null && #released in value;
  }

  /** @internal */
  assertUsable(): void {
    MemPool.#assertUsable(this);
  }

  // Static, so a method called on something else (`const f = pool.release; f()`) is refused
  // with a code too.
  static #assertUsable(pool: unknown): asserts pool is MemPool {
    if (!MemPool.isMemPool(pool)) throw typeError('a MemPool made with new MemPool()', 'pool', pool);
    pool.#assertCurrent();
  }

  #assertCurrent(): void {
    if (this.#released || this.#generation !== generation()) {
      throw new InvalidArgumentError(`MemPool (${this.id.join(', ')}) was released`, 'ERR_CCA_INVALID_POOL');
    }
  }

  /** Users of the pool: 1 for the MemPool itself, +1 while use_mem_pool runs; 0 once released. */
  use_count(): number {
    if (!MemPool.isMemPool(this)) throw typeError('a MemPool made with new MemPool()', 'pool', this);
    return this.#generation === generation() ? native.poolUseCount(this.device, this.id[1]!) : 0;
  }

  /** This pool's segments (the fast path reads no history). */
  snapshot(options?: { includeTraces?: boolean }): Segment[] {
    MemPool.#assertUsable(this);
    const o = checkOptions<{ includeTraces: boolean }>('snapshot options', options, ['includeTraces']);
    if (o.includeTraces !== undefined) checkBoolean('options.includeTraces', o.includeTraces);
    return segmentsOf({ mempoolId: this.id }, [this.device]);
  }

  /**
   * Gives the pool up: its cached memory returns to the device as soon as nothing is
   * allocated from it; live buffers stay valid until freed.
   */
  release(): void {
    MemPool.#assertUsable(this);
    native.poolRelease(this.device, this.id[1]!);
    this.#released = true;
  }

  [Symbol.dispose](): void {
    if (!this.#released) this.release();
  }
}

/**
 * Runs `fn` with this thread's allocations on `pool`'s device routed to `pool`; returns
 * fn's result. An async fn keeps the routing until its promise settles, so other work
 * that allocates on this thread meanwhile is routed too (as PyTorch routes by thread).
 */
export function use_mem_pool<T>(pool: MemPool, fn: () => T): T {
  if (!MemPool.isMemPool(pool)) throw typeError('a MemPool made with new MemPool()', 'pool', pool);
  if (typeof fn !== 'function') throw typeError('a function', 'fn', fn);
  pool.assertUsable();
  const n = pool.id[1]!;
  native.poolBegin(pool.device, n);
  return runScoped(fn, () => native.poolEnd(pool.device, n));
}
