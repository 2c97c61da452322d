// MemPool, mirroring torch.cuda.MemPool: a private pool on one device. Allocations made
// inside memory.use_mem_pool(pool, fn) come from it and go back to it; its snapshot shows
// only its segments; releasing it returns its cached memory once nothing uses it.
import { runScoped } from './scoped.js';
import { ArgumentTypeError, InvalidArgumentError } from './errors.js';
import { native } from './native.js';
import { resolveDevice } from './device.js';
import { generation } from './generation.js';
import { checkBoolean, checkOptions, typeError } from './validate.js';
import { segmentsOf } from './history/snapshot-build.js';
import { tuple } from './snapshot/tuple.js';
import type { Segment } from './snapshot/types.js';

export interface MemPoolOptions {
  device?: number;
  use_on_oom?: boolean;
  useOnOom?: boolean;
  no_split?: boolean;
  noSplit?: boolean;
}

// One of a key's two spellings, checked as a boolean; false when neither is given.
function poolFlag(o: MemPoolOptions, snake: 'use_on_oom' | 'no_split', camel: 'useOnOom' | 'noSplit'): boolean {
  if (o[snake] !== undefined && o[camel] !== undefined) {
    throw new ArgumentTypeError(`MemPool options give both ${snake} (PyTorch's spelling) and ${camel}: pass one of them`);
  }
  const name = o[snake] !== undefined ? snake : camel;
  const value = o[name];
  if (value === undefined) return false;
  checkBoolean(`options.${name}`, value);
  return value;
}

export class MemPool {
  /** PyTorch's id: the tuple (0, n). */
  readonly id: number[];
  readonly device: number;
  #released = false;
  readonly #generation = generation();

  /** Whether its cached blocks serve other requests before an out-of-memory error. */
  readonly use_on_oom: boolean;
  /** Whether its blocks are never split. */
  readonly no_split: boolean;

  /**
   * PyTorch's `MemPool(use_on_oom=False, no_split=False)` on a device (default: the current
   * one). `use_on_oom`: when a request outside any MemPool finds no memory on the device,
   * a cached block of this pool serves it before the cache is released and it fails.
   * `no_split`: a request takes a whole cached block or a whole new segment, never a part.
   * The camelCase spellings `useOnOom` / `noSplit` work too (one per key).
   */
  constructor(options?: MemPoolOptions) {
    const o = checkOptions<MemPoolOptions>('MemPool options', options, [
      'device', 'use_on_oom', 'useOnOom', 'no_split', 'noSplit',
    ]);
    this.device = resolveDevice(o.device, 'options.device');
    this.use_on_oom = poolFlag(o, 'use_on_oom', 'useOnOom');
    this.no_split = poolFlag(o, 'no_split', 'noSplit');
    this.id = tuple(0, native.poolCreate(this.device, this.no_split, this.use_on_oom));
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
