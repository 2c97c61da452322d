// CUDA graphs: a stream's work captured once (kernel launches, async copies, allocations and
// frees, event records and waits, forks to side streams), then launched with one native
// call. The allocator is safe under capture as PyTorch's is: the capture's allocations come
// from a private pool that no eager work can take while a graph uses it, and it records or
// queries no event meanwhile (docs/compute.md, "Graphs"; the Note in
// native/allocator/policy/captures.cpp).
import { ArgumentTypeError, InvalidArgumentError } from '../errors.js';
import { holdForGraph, recording, setRecording, type CaptureRecord, type DeviceBuffer } from '../device-buffer.js';
import { native } from '../native.js';
import { resolveDevice } from '../device.js';
import { generation } from '../generation.js';
import { MemPool } from '../mem-pool.js';
import { checkStream, type Stream } from '../stream.js';
import { checkOptions, describe, typeError } from '../validate.js';
import { tuple } from '../snapshot/tuple.js';
import { markGraphOwnedPool } from '../snapshot/pool-id.js';

/**
 * Which calls a capture forbids while it runs (the driver's CUstreamCaptureMode):
 * 'global' (default, as PyTorch's): unsafe calls on any thread invalidate it; 'thread_local':
 * only on this thread; 'relaxed': none (an event recorded in the capture is never queried).
 */
export type CaptureMode = 'global' | 'thread_local' | 'relaxed';
const MODES: Record<CaptureMode, number> = { global: 0, thread_local: 1, relaxed: 2 };

/** A pool id for graphs to share, from compute.graphPoolHandle() (PyTorch's graph_pool_handle()). */
export class GraphPool {
  /** PyTorch's id: the tuple (0, n). */
  readonly id: number[];
  readonly device: number;
  readonly #generation = generation();

  /** @internal From graphPoolHandle() only. */
  constructor(key: typeof POOL_KEY, device: number, n: number) {
    if (key !== POOL_KEY) {
      throw new ArgumentTypeError('GraphPool cannot be constructed directly; use compute.graphPoolHandle()', 'ERR_ILLEGAL_CONSTRUCTOR');
    }
    this.device = device;
    this.id = tuple(0, n);
  }

  /** @internal */
  current(): boolean {
    return this.#generation === generation();
  }
}
const POOL_KEY: unique symbol = Symbol('GraphPool');

/**
 * A new pool id on `device` (default: the current one). Graphs captured with `{ pool }` set to
 * it share one private pool: memory freed by one graph's work is reused by the next's, which
 * saves memory when the graphs never run at the same time (the caller's promise, as in PyTorch).
 */
export function graphPoolHandle(device?: number): GraphPool {
  const d = resolveDevice(device);
  return new GraphPool(POOL_KEY, d, native.graphPoolHandle(d));
}

export interface CaptureOptions {
  /** The private pool to allocate from: a graphPoolHandle(), a MemPool, or another graph's `pool`. Default: a pool of its own. */
  pool?: GraphPool | MemPool | CudaGraph;
  /** Default 'global'. */
  mode?: CaptureMode;
}

const GRAPH_KEY: unique symbol = Symbol('CudaGraph');

export class CudaGraph {
  readonly device: number;
  /** The stream it was captured on: launch() runs it there unless given another. */
  readonly stream: Stream;
  /**
   * Its private pool's id as snapshots write it (`segment_pool_id`, trace entries' `pool_id`):
   * (n, 0) for a pool of its own, as PyTorch writes a graph's own pool; (0, n) for a shared one
   * (a graphPoolHandle() or a MemPool).
   */
  readonly pool: number[];
  readonly #poolNumber: number;
  /** The work nodes captured (kernels, copies, fills, event records). */
  readonly nodes: number;
  readonly #handle: number;
  readonly #generation = generation();
  #buffers: DeviceBuffer[];
  #destroyed = false;

  /** @internal From captureGraph() only. */
  constructor(key: typeof GRAPH_KEY, stream: Stream, handle: number, buffers: DeviceBuffer[], ownPool: boolean) {
    if (key !== GRAPH_KEY) {
      throw new ArgumentTypeError('CudaGraph cannot be constructed directly; use compute.captureGraph(stream, fn)',
        'ERR_ILLEGAL_CONSTRUCTOR');
    }
    this.device = stream.device;
    this.stream = stream;
    this.#handle = handle;
    const info = native.graphInfo(this.device, handle);
    this.#poolNumber = info.pool;
    this.pool = ownPool ? tuple(info.pool, 0) : tuple(0, info.pool);
    this.nodes = info.nodes;
    this.#buffers = buffers;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** The buffers the graph's work names: none of them can be freed while it lives. */
  get buffers(): readonly DeviceBuffer[] {
    return this.#buffers;
  }

  #assertUsable(what: string): void {
    if (this.#destroyed) {
      throw new InvalidArgumentError(`${what}: the graph was destroyed`, 'ERR_CCA_INVALID_HANDLE');
    }
    if (this.#generation !== generation()) {
      throw new InvalidArgumentError(`${what}: the graph belongs to a runtime that was replaced by cuda.sim.configure()`,
        'ERR_CCA_INVALID_HANDLE');
    }
  }

  /**
   * Queues one run of the whole graph on `stream` (default: the stream it was captured on;
   * the default stream is fine too), in one native call. Returns once it is queued.
   * Launching on another stream than the graph's buffers': order their frees after it with
   * events, as with recordStreams: false.
   */
  launch(stream?: Stream): void {
    this.#assertUsable('graph.launch');
    const s = stream === undefined ? this.stream : checkStream('stream', stream, this.device, 'the graph');
    native.graphLaunch(this.device, this.#handle, s.handle);
  }

  /** Uploads the graph's work to the device ahead of its first launch (optional). */
  upload(stream?: Stream): void {
    this.#assertUsable('graph.upload');
    const s = stream === undefined ? this.stream : checkStream('stream', stream, this.device, 'the graph');
    native.graphUpload(this.device, this.#handle, s.handle);
  }

  /**
   * Destroys the graph: its buffers can be freed again, and its pool's memory returns to
   * the device once no graph uses the pool (its cached blocks at once, the rest at
   * empty_cache()). Launches already queued still complete.
   */
  destroy(): void {
    this.#assertUsable('graph.destroy');
    native.graphDestroy(this.device, this.#handle);
    this.#destroyed = true;
    for (const b of this.#buffers) holdForGraph(b, -1);
    this.#buffers = [];
  }

  [Symbol.dispose](): void {
    if (!this.#destroyed && this.#generation === generation()) this.destroy();
  }

  /** @internal The pool's id n of (0, n), for a capture sharing it. */
  poolNumber(): number {
    this.#assertUsable('the pool of a graph');
    return this.#poolNumber;
  }
}

function poolOf(pool: unknown, device: number): number {
  if (pool === undefined) return 0;
  let n: number;
  let owner: number;
  if (pool instanceof GraphPool) {
    if (!pool.current()) throw new InvalidArgumentError('options.pool belongs to a replaced runtime', 'ERR_CCA_INVALID_POOL');
    n = pool.id[1]!;
    owner = pool.device;
  } else if (MemPool.isMemPool(pool)) {
    pool.assertUsable();
    n = pool.id[1]!;
    owner = pool.device;
  } else if (pool instanceof CudaGraph) {
    n = pool.poolNumber();
    owner = pool.device;
  } else {
    throw typeError('a GraphPool (compute.graphPoolHandle()), a MemPool or a CudaGraph', 'options.pool', pool);
  }
  if (owner !== device) {
    throw new InvalidArgumentError(`options.pool is on device ${owner} but the stream is on device ${device}`,
      'ERR_CCA_DEVICE_MISMATCH');
  }
  return n;
}

/**
 * Captures the work `fn` queues on `stream` (and on streams forked from it with events) into a
 * CUDA graph, and returns it ready to launch. `fn` is synchronous: no await inside (the
 * capture would take in whatever else ran meanwhile). Allocations on the capture's streams
 * come from the graph's private pool; the buffers its work names cannot be freed while the
 * graph lives. Refused during it, with ERR_CCA_CAPTURE_UNSUPPORTED: empty_cache(), any
 * synchronize, synchronous copies and fills, stream.done() and event.done(). If `fn` throws,
 * the capture is ended, everything it took is released, and the error is rethrown.
 * The cuda backend only: on the simulator it throws ERR_CCA_CAPTURE_UNSUPPORTED.
 */
export function captureGraph(stream: Stream, fn: () => void, options?: CaptureOptions): CudaGraph {
  const s = checkStream('stream', stream);
  if (typeof fn !== 'function') throw typeError('a function', 'fn', fn);
  const o = checkOptions<CaptureOptions>('captureGraph options', options, ['pool', 'mode']);
  const mode = o.mode === undefined ? 'global' : o.mode;
  if (!(typeof mode === 'string' && Object.hasOwn(MODES, mode))) {
    throw typeError(`one of ${Object.keys(MODES).map((m) => `'${m}'`).join(', ')}`, 'options.mode', mode);
  }
  const pool = poolOf(o.pool, s.device);
  if (recording !== null) {
    throw new InvalidArgumentError('captureGraph: a capture is already running on this thread (captures do not nest); ' +
      'capture the inner work as its own graph and launch it inside', 'ERR_CCA_CAPTURE_UNSUPPORTED');
  }
  const poolNumber = native.graphCaptureBegin(s.device, s.handle, pool, MODES[mode as CaptureMode]);
  // Its own pool is written (n, 0) from the start: a snapshot taken inside fn says so too.
  if (pool === 0) markGraphOwnedPool(poolNumber);
  const record: CaptureRecord = { device: s.device, named: new Set(), allocated: new Set() };
  setRecording(record);
  let handle: number;
  try {
    const result: unknown = fn();
    if (result instanceof Promise) {
      result.catch(() => {});  // its error is reported below, not as an unhandled rejection
      throw new ArgumentTypeError('captureGraph: fn returned a promise; the captured work must be queued ' +
        'synchronously (no await inside the capture)');
    }
  } catch (e) {
    setRecording(null);
    release(record);
    native.graphCaptureAbort(s.device, s.handle);
    throw e;
  }
  setRecording(null);
  try {
    handle = native.graphCaptureEnd(s.device, s.handle);
  } catch (e) {
    release(record);
    throw e;
  }
  // The buffers the graph names: those from before the capture are held already; those
  // allocated during it and still live are held from here on.
  const buffers = [...record.named].filter((b) => !b.disposed);
  for (const b of buffers) if (record.allocated.has(b)) holdForGraph(b, +1);
  return new CudaGraph(GRAPH_KEY, s, handle, buffers, pool === 0);
}

// A capture that made no graph gives back the holds its naming took.
function release(record: CaptureRecord): void {
  for (const b of record.named) if (!record.allocated.has(b)) holdForGraph(b, -1);
}

/** Whether a capture is underway on `device` and how many frees wait for its end (for tests and monitoring). */
export function captureState(device?: number): { underway: boolean; deferredFrees: number } {
  return native.captureState(resolveDevice(device));
}

/** @internal For tests only: with false, captures route no allocation to their pools (the negative control). */
export function setCaptureRoutingForTests(route: boolean, device?: number): void {
  if (typeof route !== 'boolean') throw new ArgumentTypeError(`Expected a boolean for route but received ${describe(route)}`);
  native.captureRoutingForTests(resolveDevice(device), route);
}
