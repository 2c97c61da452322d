// Every public function, every parameter, against one pool of wrong values: each call must
// throw an error with a stable `code` whose message names the parameter, and leave the
// process exactly as it was: stats, segments, the runtime (its generation), allocator and
// history settings, pools, the current device. New public functions belong in CALLS.
import { beforeEach, describe, expect, it } from 'vitest';
import {
  DeviceBuffer, MemPool, Stream, analysis, compute, cuda, encodeSnapshot, interop, formatSize, loadSnapshot, memory, monitoring, parseSnapshot,
  replay, use_mem_pool,
} from '../../lib/index.js';
import { capture } from '../../lib/history/record.js';
import { stacks } from '../../lib/history/stack-store.js';
import { annotations } from '../../lib/history/annotations.js';
import type { Snapshot } from '../../lib/snapshot/types.js';
import { freshSim } from '../support/helpers.js';
import { native } from '../../lib/native.js';

const sym = Symbol('s');
/** The pool every parameter is tried with; each kind skips the values that are valid for it. */
const WRONG: unknown[] = [
  undefined, null, NaN, Infinity, -Infinity, -1, 0.5, 2 ** 53 + 2, 2 ** 64, 1n, '', 'banana', '0', {}, [], true, sym,
  () => 1, Object.create(null), new Uint8Array(2),
];

type Kind = (v: unknown) => boolean;  // true when the value is valid for the parameter
const isInt = (v: unknown, lo: number, hi: number) => typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi;
const kinds = {
  device: ((v) => v === undefined || v === null || isInt(v, 0, 1)) as Kind,
  requiredDevice: ((v) => isInt(v, 0, 1)) as Kind,
  options: ((v) => v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0 &&
    !(v instanceof Uint8Array))) as Kind,
  optionalBool: ((v) => v === undefined || typeof v === 'boolean') as Kind,
  bool: ((v) => typeof v === 'boolean') as Kind,
  string: ((v) => typeof v === 'string') as Kind,
  fn: ((v) => typeof v === 'function') as Kind,
  optionalFn: ((v) => v === undefined || typeof v === 'function') as Kind,
  size: ((v) => isInt(v, 0, 2 ** 30)) as Kind,
  count: ((v) => isInt(v, 0, 2 ** 31 - 1)) as Kind,
  fraction: ((v) => typeof v === 'number' && v >= 0 && v <= 1) as Kind,
  width: ((v) => isInt(v, 1, 10_000)) as Kind,
  none: (() => false) as Kind,  // no value of the pool is valid here
};

interface Setup {
  buf: DeviceBuffer;
  freed: DeviceBuffer;
  stale: DeviceBuffer;
  staleStream: Stream;
  destroyed: Stream;
  side: Stream;
  pool: MemPool;
  released: MemPool;
  snap: Snapshot;
}

let S: Setup;

beforeEach(() => {
  freshSim();
  const stale = cuda.alloc(4096);
  const staleStream = Stream.create();
  freshSim({ devices: 2 });
  memory._set_allocator_settings('max_split_size_mb:64');
  memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 1000, stackDepth: 7 });
  const buf = cuda.alloc(4096, { tag: 'kept' });
  const freed = cuda.alloc(8192);
  freed.free();
  const destroyed = Stream.create();
  destroyed.destroy();
  const side = Stream.create();
  const pool = new MemPool();
  use_mem_pool(pool, () => cuda.alloc(1024));
  const released = new MemPool();
  released.release();
  memory.annotate('step', () => cuda.alloc(512).free());
  S = { buf, freed, stale, staleStream, destroyed, side, pool, released, snap: memory._snapshot() };
});

function fingerprint(): string {
  const state = {
    stats: [0, 1].map((d) => memory.memory_stats(d)),
    byTag: [0, 1].map((d) => memory.memory_stats_by_tag(d)),
    segments: memory.memory_snapshot(),
    runtime: cuda.runtimeInfo(),
    settings: memory.get_allocator_settings(),
    fraction: [0, 1].map((d) => memory.get_per_process_memory_fraction(d)),
    device: cuda.currentDevice(),
    history: { ...capture, countdown: 0, depth: stacks.depth, nodeFrames: stacks.keepNodeFrames, notes: annotations().length },
    metadata: memory._get_memory_metadata(),
    caching: [0, 1].map((d) => native.cachingEnabled(d)),
    pools: [S.pool.use_count(), S.released.use_count()],
    sim: [0, 1].map((d) => cuda.sim.state(d)),
    invariants: [0, 1].map((d) => memory.check_invariants(d)),
  };
  return JSON.stringify(state, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
}

interface Call {
  /** What is called, as a user would write it. */
  name: string;
  /** The parameter that gets the wrong value; the message must name it. */
  param: string;
  valid: Kind;
  /** Wrong values beyond the pool (stale, freed, forged objects...). */
  extra?: () => unknown[];
  call: (v: unknown) => unknown;
}

const snapKind: Kind = (v) => Array.isArray(v) && v.length === 0;  // [] is a legacy (empty) segment list
const forgedBuffer = () => [Object.create(DeviceBuffer.prototype), { ptr: S.buf.ptr, size: 1e9, device: 0 }];
const badStreams = () => [S.destroyed, S.staleStream, Object.create(Stream.prototype), { handle: 0, device: 0 }];
const badSnapshots = () => [
  { segments: 'x' }, { segments: [{}] }, { segments: [], device_traces: [[{ action: 'alloc' }]] },
  { ...S.snap, segments: [{ ...S.snap.segments[0]!, total_size: 'big' }] },
  { ...S.snap, external_annotations: [{ device: 0, name: 'x', stage: 'MIDDLE', time_us: 1 }] },
];
const badOptions = (keys: string[]) => () => keys.map((k) => ({ [`${k}x`]: 1 }));
// _record_memory_history's first argument: null stops, a boolean is the legacy form, an
// object holds the options.
const historyFirstArg: Kind = (v) => v === undefined || v === null || typeof v === 'boolean' || kinds.options(v);

const CALLS: Call[] = [
  // cuda
  { name: 'cuda.alloc', param: 'size', valid: kinds.size, call: (v) => cuda.alloc(v as number) },
  { name: 'cuda.alloc', param: 'options', valid: kinds.options, extra: badOptions(['stream', 'device', 'tag']), call: (v) => cuda.alloc(16, v as never) },
  { name: 'cuda.alloc', param: 'options.stream', valid: (v) => v === undefined, extra: badStreams, call: (v) => cuda.alloc(16, { stream: v as Stream }) },
  { name: 'cuda.alloc', param: 'options.device', valid: kinds.device, call: (v) => cuda.alloc(16, { device: v as number }) },
  { name: 'cuda.alloc', param: 'options.tag', valid: (v) => v === undefined || typeof v === 'string', call: (v) => cuda.alloc(16, { tag: v as string }) },
  { name: 'cuda.recordStream', param: 'buffer', valid: kinds.none, extra: () => [S.freed, S.stale, ...forgedBuffer()], call: (v) => cuda.recordStream(v as DeviceBuffer, S.side) },
  { name: 'cuda.recordStream', param: 'stream', valid: kinds.none, extra: badStreams, call: (v) => cuda.recordStream(S.buf, v as Stream) },
  { name: 'cuda.synchronize', param: 'device', valid: kinds.device, call: (v) => cuda.synchronize(v as number) },
  { name: 'cuda.setDevice', param: 'device', valid: kinds.requiredDevice, call: (v) => cuda.setDevice(v as number) },
  { name: 'cuda.getDeviceProperties', param: 'device', valid: kinds.device, call: (v) => cuda.getDeviceProperties(v as number) },
  { name: 'cuda.deviceName', param: 'device', valid: kinds.device, call: (v) => cuda.deviceName(v as number) },
  { name: 'cuda.isSimulated', param: 'device', valid: kinds.device, call: (v) => cuda.isSimulated(v as number) },
  { name: 'cuda.defaultStream', param: 'device', valid: kinds.device, call: (v) => cuda.defaultStream(v as number) },
  { name: 'cuda.Stream.create', param: 'options', valid: kinds.options, extra: badOptions(['device']), call: (v) => cuda.Stream.create(v as never) },
  { name: 'cuda.Stream.create', param: 'options.device', valid: kinds.device, call: (v) => cuda.Stream.create({ device: v as number }) },
  { name: 'cuda.sim.configure', param: 'options', valid: kinds.options, extra: badOptions(['devices']), call: (v) => cuda.sim.configure(v as never) },
  { name: 'cuda.sim.configure', param: 'options.devices', valid: (v) => v === undefined || isInt(v, 1, 64), call: (v) => cuda.sim.configure({ devices: v as number }) },
  { name: 'cuda.sim.configure', param: 'options.capacityBytes', valid: (v) => v === undefined || isInt(v, 1, 2 ** 40), call: (v) => cuda.sim.configure({ capacityBytes: v as number }) },
  { name: 'cuda.sim.holdStream', param: 'stream', valid: kinds.none, extra: badStreams, call: (v) => cuda.sim.holdStream(v as Stream) },
  { name: 'cuda.sim.holdStream', param: 'held', valid: kinds.optionalBool, call: (v) => cuda.sim.holdStream(S.side, v as boolean) },
  { name: 'cuda.sim.completeStream', param: 'stream', valid: kinds.none, extra: badStreams, call: (v) => cuda.sim.completeStream(v as Stream) },
  { name: 'cuda.sim.failNextMallocs', param: 'count', valid: kinds.count, call: (v) => cuda.sim.failNextMallocs(v as number) },
  { name: 'cuda.sim.failNextMallocs', param: 'device', valid: kinds.device, call: (v) => cuda.sim.failNextMallocs(0, v as number) },
  { name: 'cuda.sim.failNextEventQueries', param: 'count', valid: kinds.count, call: (v) => cuda.sim.failNextEventQueries(v as number) },
  { name: 'cuda.sim.state', param: 'device', valid: kinds.device, call: (v) => cuda.sim.state(v as number) },
  // DeviceBuffer and Stream methods
  { name: 'buf.copyFrom', param: 'copyFrom array', valid: (v) => v instanceof Uint8Array, call: (v) => S.buf.copyFrom(v as Uint8Array) },
  { name: 'buf.copyFrom', param: 'offset', valid: (v) => v === undefined || isInt(v, 0, 4094), call: (v) => S.buf.copyFrom(new Uint8Array(2), v as number) },
  { name: 'buf.copyTo', param: 'copyTo array', valid: (v) => v instanceof Uint8Array, call: (v) => S.buf.copyTo(v as Uint8Array) },
  { name: 'buf.copyTo', param: 'offset', valid: (v) => v === undefined || isInt(v, 0, 4094), call: (v) => S.buf.copyTo(new Uint8Array(2), v as number) },
  { name: 'buf.fill', param: 'value', valid: (v) => isInt(v, 0, 255), call: (v) => S.buf.fill(v as number) },
  { name: 'buf.fill', param: 'offset', valid: (v) => v === undefined || isInt(v, 0, 4096), call: (v) => S.buf.fill(0, v as number) },
  { name: 'buf.fill', param: 'bytes', valid: (v) => v === undefined || isInt(v, 0, 4096), call: (v) => S.buf.fill(0, 0, v as number) },
  { name: 'DeviceBuffer methods', param: 'buffer', valid: kinds.none, extra: () => [S.freed, S.stale, ...forgedBuffer()],
    call: (v) => DeviceBuffer.prototype.copyTo.call(v as DeviceBuffer, new Uint8Array(4)) },
  { name: 'Stream methods', param: 'stream', valid: kinds.none, extra: badStreams, call: (v) => Stream.prototype.synchronize.call(v as Stream) },
  // compute (the simulator runs no kernels: what needs one is in test/contract/compute.test.ts)
  { name: 'compute.Module.load', param: 'image', valid: (v) => typeof v === 'string' || ArrayBuffer.isView(v), call: (v) => compute.Module.load(v as string) },
  { name: 'compute.Module.load', param: 'options', valid: kinds.options, extra: badOptions(['device', 'names']), call: (v) => compute.Module.load('x', v as never) },
  { name: 'compute.Module.load', param: 'options.device', valid: kinds.device, call: (v) => compute.Module.load('x', { device: v as number }) },
  { name: 'compute.Module.load', param: 'options.names', valid: (v) => v === undefined || kinds.options(v), extra: () => [{ 'f<int>': 1 }],
    call: (v) => compute.Module.load('x', { names: v as never }) },
  { name: 'compute.launchLimits', param: 'device', valid: kinds.device, call: (v) => compute.launchLimits(v as number) },
  // Graphs: every argument is checked before the backend is asked (the sim then refuses valid ones).
  { name: 'compute.captureGraph', param: 'stream', valid: kinds.none, extra: badStreams, call: (v) => compute.captureGraph(v as Stream, () => {}) },
  { name: 'compute.captureGraph', param: 'fn', valid: kinds.fn, call: (v) => compute.captureGraph(cuda.defaultStream(), v as () => void) },
  { name: 'compute.captureGraph', param: 'options', valid: kinds.options, extra: badOptions(['pool', 'mode']),
    call: (v) => compute.captureGraph(cuda.defaultStream(), () => {}, v as never) },
  { name: 'compute.captureGraph', param: 'options.mode', valid: (v) => v === undefined, extra: () => ['Global', 'loose', ''],
    call: (v) => compute.captureGraph(cuda.defaultStream(), () => {}, { mode: v as never }) },
  { name: 'compute.captureGraph', param: 'options.pool', valid: (v) => v === undefined,
    call: (v) => compute.captureGraph(cuda.defaultStream(), () => {}, { pool: v as never }) },
  { name: 'compute.graphPoolHandle', param: 'device', valid: (v) => false, call: (v) => compute.graphPoolHandle(v as number) },
  { name: 'compute.captureState', param: 'device', valid: kinds.device, call: (v) => compute.captureState(v as number) },
  // Matrix multiplication: every argument is checked before the backend is asked (the sim then refuses valid ones).
  { name: 'compute.matmul', param: 'a', valid: kinds.none, extra: () => [S.freed, ...forgedBuffer()],
    call: (v) => compute.matmul(v as DeviceBuffer, S.buf, S.buf, { m: 1, n: 1, k: 1 }) },
  { name: 'compute.gemm', param: 'c', valid: kinds.none, extra: () => [S.freed, ...forgedBuffer()],
    call: (v) => compute.gemm(S.buf, S.buf, v as DeviceBuffer, { m: 1, n: 1, k: 1 }) },
  { name: 'compute.matmul', param: 'options|m|n|k|dtype|compute|transA|lda|batch|alpha|stream|bias|epilogue', valid: (v) => false,
    extra: () => [{ m: 1, n: 1 }, { m: -1, n: 1, k: 1 }, { m: 1, n: 1, k: 1.5 }, { m: 1, n: 1, k: 1, dtype: 'f64' },
      { m: 1, n: 1, k: 1, compute: 'fp32' }, { m: 1, n: 1, k: 1, transA: 1 }, { m: 1, n: 1, k: 1, lda: 0 },
      { m: 1, n: 1, k: 1, batch: 0 }, { m: 1, n: 1, k: 1, alpha: NaN }, { m: 1, n: 1, k: 1, stream: 5 },
      { m: 1, n: 1, k: 1, bias: 5 }, { m: 1, n: 1, k: 1, epilogue: 'tanh' }, ...badOptions(['m'])()],
    call: (v) => compute.matmul(S.buf, S.buf, S.buf, v as never) },
  { name: 'compute.blasWorkspaces', param: 'device', valid: kinds.device, call: (v) => compute.blasWorkspaces(v as number) },
  { name: 'compute.clearBlasWorkspaces', param: 'device', valid: kinds.device, call: (v) => compute.clearBlasWorkspaces(v as number) },
  { name: 'compute.compile', param: 'source', valid: kinds.string, call: (v) => compute.compile(v as string) },
  { name: 'compute.compile', param: 'options', valid: kinds.options, extra: badOptions(['arch', 'defines']), call: (v) => compute.compile('', v as never) },
  { name: 'compute.compile', param: 'options.arch', valid: (v) => v === undefined, extra: () => ['sm90', 'gfx90a', 'sm_'], call: (v) => compute.compile('', { arch: v as string }) },
  { name: 'compute.compile', param: 'options.defines', valid: (v) => v === undefined || kinds.options(v), extra: () => [{ 'a-b': 1 }, { A: {} }],
    call: (v) => compute.compile('', { defines: v as never }) },
  { name: 'compute.compile', param: 'options.nameExpressions', valid: (v) => v === undefined || (Array.isArray(v) && v.length === 0), extra: () => [[1]],
    call: (v) => compute.compile('', { nameExpressions: v as string[] }) },
  { name: 'compute.compile', param: 'options.headers', valid: (v) => v === undefined || kinds.options(v), extra: () => [{ 'a.h': 1 }],
    call: (v) => compute.compile('', { headers: v as never }) },
  { name: 'new compute.Event', param: 'options', valid: kinds.options, extra: badOptions(['device', 'timing']), call: (v) => new compute.Event(v as never) },
  { name: 'new compute.Event', param: 'options.device', valid: kinds.device, call: (v) => new compute.Event({ device: v as number }) },
  { name: 'new compute.Event', param: 'options.timing', valid: kinds.optionalBool, call: (v) => new compute.Event({ timing: v as boolean }) },
  { name: 'event.record', param: 'stream', valid: (v) => v === undefined, extra: badStreams, call: (v) => new compute.Event().record(v as Stream) },
  { name: 'event.elapsedTime', param: 'end', valid: kinds.none, extra: () => [Object.create(compute.Event.prototype)], call: (v) => new compute.Event({ timing: true }).elapsedTime(v as never) },
  { name: 'stream.waitEvent', param: 'event', valid: kinds.none, extra: () => [Object.create(compute.Event.prototype)], call: (v) => S.side.waitEvent(v as never) },
  { name: 'stream.waitStream', param: 'other', valid: kinds.none, extra: badStreams, call: (v) => S.side.waitStream(v as Stream) },
  { name: 'buf.view', param: 'offset', valid: (v) => isInt(v, 0, 4096), call: (v) => S.buf.view(v as number) },
  { name: 'buf.view', param: 'bytes', valid: (v) => v === undefined || isInt(v, 0, 4096), call: (v) => S.buf.view(0, v as number) },
  { name: 'buf.toDLPack', param: 'options', valid: kinds.none, extra: badOptions(['dtype', 'shape', 'strides', 'byteOffset', 'allowSimulated']), call: (v) => S.buf.toDLPack(v as never) },
  { name: 'buf.toDLPack', param: 'options.dtype', valid: kinds.none, extra: () => ['F32', 'float32', 'ptr'], call: (v) => S.buf.toDLPack({ dtype: v as never, shape: [], allowSimulated: true }) },
  { name: 'buf.toDLPack', param: 'options.shape|OUT_OF_BOUNDS', valid: (v) => Array.isArray(v) && v.length === 0, extra: () => [[-1], [1.5], [1025], [2, 513], new Array(33).fill(1)], call: (v) => S.buf.toDLPack({ dtype: 'f32', shape: v as number[], allowSimulated: true }) },
  { name: 'buf.toDLPack', param: 'options.strides|OUT_OF_BOUNDS', valid: (v) => v === undefined, extra: () => [[1, 1], [-1], [2000]], call: (v) => S.buf.toDLPack({ dtype: 'f32', shape: [4], strides: v as number[], allowSimulated: true }) },
  { name: 'buf.toDLPack', param: 'options.byteOffset|OUT_OF_BOUNDS', valid: (v) => v === undefined || isInt(v, 0, 4092), extra: () => [4093, 8192], call: (v) => S.buf.toDLPack({ dtype: 'f32', shape: [], byteOffset: v as number, allowSimulated: true }) },
  { name: 'buf.toDLPack', param: 'allowSimulated', valid: (v) => v === true, call: (v) => S.buf.toDLPack({ dtype: 'f32', shape: [], allowSimulated: v as boolean }) },
  { name: 'buf.toDLPack', param: 'buffer|freed', valid: (v) => v !== S.freed, extra: () => [S.freed], call: (v) => (v as DeviceBuffer).toDLPack({ dtype: 'f32', shape: [], allowSimulated: true }) },
  { name: 'cuda.openIpcHandle', param: 'handle|IPC_HANDLE', valid: kinds.none, extra: () => [new Uint8Array(120), new Uint8Array(119), new Uint8Array(121)], call: (v) => cuda.openIpcHandle(v as Uint8Array) },
  { name: 'buf.ipcHandle', param: 'buffer|freed|IPC_UNSUPPORTED', valid: (v) => v !== S.freed && v !== S.buf, extra: () => [S.freed, S.buf], call: (v) => (v as DeviceBuffer).ipcHandle() },
  { name: 'interop.clients', param: 'device', valid: kinds.device, call: (v) => interop.clients(v as number) },
  { name: 'cuda.allocHost', param: 'size', valid: kinds.size, call: (v) => cuda.allocHost(v as number) },
  { name: 'buf.copyFromAsync', param: 'src|not pinned', valid: kinds.none, extra: () => [S.freed, ...forgedBuffer()], call: (v) => S.buf.copyFromAsync(v as never) },
  { name: 'buf.copyFromAsync', param: 'options', valid: kinds.options, extra: badOptions(['offset', 'stream']), call: (v) => S.buf.copyFromAsync(S.buf, v as never) },
  { name: 'buf.copyFromAsync', param: 'options.offset|length', valid: (v) => v === undefined || v === 0, call: (v) => S.buf.copyFromAsync(S.buf, { offset: v as number }) },
  { name: 'buf.copyFromAsync', param: 'options.stream', valid: (v) => v === undefined, extra: badStreams, call: (v) => S.buf.copyFromAsync(S.buf, { stream: v as Stream }) },
  { name: 'buf.copyFromAsync', param: 'options.recordStreams', valid: kinds.optionalBool, call: (v) => S.buf.copyFromAsync(S.buf, { recordStreams: v as boolean }) },
  { name: 'buf.copyToAsync', param: 'dst|not pinned', valid: kinds.none, call: (v) => S.buf.copyToAsync(v as never) },
  // memory
  ...(['memory_stats', 'memory_stats_as_nested_dict', 'memory_allocated', 'max_memory_allocated', 'memory_reserved',
    'max_memory_reserved', 'reset_peak_memory_stats', 'reset_accumulated_memory_stats', 'empty_cache', 'mem_get_info',
    'get_per_process_memory_fraction', 'check_invariants', 'memory_summary', 'memory_stats_by_tag'] as const).map((f): Call => ({
    name: `memory.${f}`, param: 'device', valid: kinds.device, call: (v) => (memory[f] as (d: unknown) => unknown)(v),
  })),
  { name: 'memory.set_per_process_memory_fraction', param: 'fraction', valid: kinds.fraction, extra: () => [1.5, -0.1], call: (v) => memory.set_per_process_memory_fraction(v as number) },
  { name: 'memory.set_per_process_memory_fraction', param: 'device', valid: kinds.device, call: (v) => memory.set_per_process_memory_fraction(1, v as number) },
  { name: 'memory.memory_summary', param: 'abbreviated', valid: kinds.optionalBool, call: (v) => memory.memory_summary(0, v as boolean) },
  { name: 'memory._set_allocator_settings', param: 'settings|config|expandable_segments|max_split_size', valid: (v) => v === '', extra: () => ['bogus:1', 'max_split_size_mb:-1', 'expandable_segments:yes'],
    call: (v) => memory._set_allocator_settings(v as string) },
  ...(['memory_snapshot', '_snapshot'] as const).flatMap((f): Call[] => [
    { name: `memory.${f}`, param: 'options', valid: kinds.options, extra: badOptions(['mempoolId', 'includeTraces']), call: (v) => memory[f](v as never) },
    { name: `memory.${f}`, param: 'options.includeTraces', valid: kinds.optionalBool, call: (v) => memory[f]({ includeTraces: v as boolean }) },
    { name: `memory.${f}`, param: 'options.mempoolId', valid: (v) => v === undefined, extra: () => [[0, 2 ** 32], [0, -1], [1, 1], [0, 1.5], [0], [0, 1, 2], [0, '1'], [0, 0]],
      call: (v) => memory[f]({ mempoolId: v as number[] }) },
  ]),
  { name: 'memory._record_memory_history', param: 'enabled', valid: historyFirstArg,
    extra: () => ['none', 'ALL'], call: (v) => memory._record_memory_history(v as never) },
  ...([
    ['context', (v: unknown) => v === undefined || v === null, ['ALL', 'stack']],
    ['stacks', (v: unknown) => v === undefined, ['cpp']],
    ['maxEntries', (v: unknown) => v === undefined || isInt(v, 0, 2 ** 53 - 1), []],
    ['device', kinds.device, []],
    ['clearHistory', kinds.optionalBool, ['yes']],
    ['skipActions', (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0), [['nope'], [1]]],
    ['stackSampleRate', (v: unknown) => v === undefined || (typeof v === 'number' && v > 0 && v <= 1), [0]],
    ['stackDepth', (v: unknown) => v === undefined || isInt(v, 1, 200), [0, 201]],
    ['keepNodeFrames', kinds.optionalBool, []],
    // PyTorch's spellings, and its options that change nothing here.
    ['max_entries', (v: unknown) => v === undefined || isInt(v, 0, 2 ** 53 - 1), []],
    ['clear_history', kinds.optionalBool, ['yes']],
    ['skip_actions', (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0), [['nope'], [1]]],
    ['compile_context', kinds.optionalBool, []],
    ['global_record_annotations', kinds.optionalBool, []],
    // record_cuda: false alone records nothing: refused (with record_pinned_host_memory it is host only).
    ['record_cuda', (v: unknown) => v === undefined || v === true, []],
    ['record_pinned_host_memory', kinds.optionalBool, ['yes']],
    ['recordCuda', (v: unknown) => v === undefined || v === true, []],
    ['recordPinnedHostMemory', kinds.optionalBool, ['yes']],
  ] as const).map(([key, valid, extra]): Call => ({
    name: 'memory._record_memory_history', param: key, valid, extra: () => [...extra],
    // stackDepth beside the bad value: a refused call must not have set it.
    call: (v) => memory._record_memory_history({ enabled: 'all', stackDepth: 3, [key]: v }),
  })),
  { name: 'memory._record_memory_history', param: 'options|enabled|max_entries', valid: historyFirstArg,
    extra: () => [{ enabled: 'all', maxEntriess: 10 }, { Enabled: 'all' }, { max_entries: 5, maxEntries: 5 }], call: (v) => memory._record_memory_history(v as never) },
  ...([
    ['compile_context', kinds.optionalBool],
    ['record_cuda', (v: unknown) => v === undefined || v === true],
    ['record_pinned_host_memory', kinds.optionalBool],
  ] as const).map(([key, valid]): Call => ({
    name: 'memory._record_memory_history (legacy)', param: key, valid, call: (v) => memory._record_memory_history(true, { [key]: v }),
  })),
  { name: 'memory._set_memory_metadata', param: 'metadata', valid: kinds.string, call: (v) => memory._set_memory_metadata(v as string) },
  { name: 'memory.withMemoryMetadata', param: 'metadata', valid: kinds.string, call: (v) => memory.withMemoryMetadata(v as string, () => 1) },
  { name: 'memory.withMemoryMetadata', param: 'fn', valid: kinds.fn, call: (v) => memory.withMemoryMetadata('m', v as () => void) },
  { name: 'memory._allocation_traceback', param: 'buffer', valid: (v) => isInt(v, 0, 2 ** 53 - 1), extra: () => [S.freed, S.stale, ...forgedBuffer()],
    call: (v) => memory._allocation_traceback(v as number) },
  { name: 'memory._allocation_traceback', param: 'device', valid: kinds.device, extra: () => [1], call: (v) => memory._allocation_traceback(S.buf, v as number) },
  { name: 'memory._annotate_memory', param: 'buffer|_annotate_memory', valid: kinds.none, extra: () => [S.freed, S.stale, ...forgedBuffer(), 123],
    call: (v) => memory._annotate_memory(v as number, 'note') },
  { name: 'memory._annotate_memory', param: 'metadata', valid: kinds.string, call: (v) => memory._annotate_memory(S.buf, v as string) },
  { name: 'memory._annotate_memory', param: 'device', valid: kinds.device, extra: () => [1], call: (v) => memory._annotate_memory(S.buf, 'note', v as number) },
  { name: 'memory.caching_allocator_enable', param: 'value', valid: kinds.optionalBool, call: (v) => memory.caching_allocator_enable(v as boolean) },
  { name: 'memory.caching_allocator_disabled', param: 'fn', valid: kinds.fn, call: (v) => memory.caching_allocator_disabled(v as () => void) },
  ...(['record_context', 'trace_alloc_record_context', 'clear_history', 'record_context_cpp'] as const).map((key): Call => ({
    name: 'memory._record_memory_history (legacy)', param: key, valid: kinds.optionalBool, call: (v) => memory._record_memory_history(true, { [key]: v }),
  })),
  { name: 'memory._record_memory_history (legacy)', param: 'trace_alloc_max_entries', valid: (v) => v === undefined || isInt(v, 0, 2 ** 53 - 1),
    call: (v) => memory._record_memory_history(true, { trace_alloc_max_entries: v }) },
  { name: 'memory._record_memory_history (legacy)', param: 'device', valid: kinds.device, call: (v) => memory._record_memory_history(true, { device: v }) },
  { name: 'memory._record_memory_history (legacy)', param: 'skip_actions', valid: (v) => v === undefined || v === null || (Array.isArray(v) && v.length === 0),
    call: (v) => memory._record_memory_history(true, { skip_actions: v }) },
  // Valid names are never tried: they would write files.
  { name: 'memory._dump_snapshot', param: 'filename|not a regular file|cannot write', valid: (v) => v === undefined || (typeof v === 'string' && v !== ''), extra: () => ['/', '/nonexistent-dir/x.pickle'], call: (v) => memory._dump_snapshot(v as string) },
  { name: 'memory._dump_snapshot', param: 'options', valid: kinds.options, extra: () => [{ format: 'xml' }, { formt: 'json' }], call: (v) => memory._dump_snapshot('/tmp/cca-never.pickle', v as never) },
  { name: 'memory.annotate', param: 'name', valid: kinds.string, call: (v) => memory.annotate(v as string, () => 1) },
  { name: 'memory.annotate', param: 'fn', valid: kinds.optionalFn, call: (v) => memory.annotate('r', v as () => void) },
  { name: 'memory.onOutOfMemory', param: 'callback', valid: kinds.fn, call: (v) => memory.onOutOfMemory(v as never) },
  { name: 'memory.onTrace', param: 'cb', valid: kinds.fn, call: (v) => memory.onTrace(v as never) },
  { name: 'memory.onTrace', param: 'options', valid: kinds.options, extra: badOptions(['actions', 'device', 'capacity', 'intervalMs']), call: (v) => memory.onTrace(() => {}, v as never) },
  { name: 'memory.onTrace', param: 'options.actions', valid: (v) => v === undefined || (Array.isArray(v) && v.every((a) => native.traceActionNames().includes(a))), extra: () => [['alloc', 'allocate'], [1]], call: (v) => memory.onTrace(() => {}, { actions: v as never }) },
  { name: 'memory.onTrace', param: 'options.device', valid: kinds.device, call: (v) => memory.onTrace(() => {}, { device: v as number }) },
  { name: 'memory.onTrace', param: 'options.capacity', valid: (v) => v === undefined || isInt(v, 1, 2 ** 24), call: (v) => memory.onTrace(() => {}, { capacity: v as number }) },
  { name: 'memory.onTrace', param: 'options.intervalMs', valid: (v) => v === undefined || isInt(v, 1, 60_000), call: (v) => memory.onTrace(() => {}, { intervalMs: v as number }) },
  { name: 'memory.dumpSnapshotOnOutOfMemory', param: 'path', valid: (v) => v === null || (typeof v === 'string' && v !== ''), call: (v) => memory.dumpSnapshotOnOutOfMemory(v as string) },
  { name: 'new MemPool', param: 'options', valid: kinds.options, extra: badOptions(['device', 'use_on_oom', 'no_split']), call: (v) => new MemPool(v as never) },
  { name: 'new MemPool', param: 'options.device', valid: kinds.device, call: (v) => new MemPool({ device: v as number }) },
  ...(['use_on_oom', 'useOnOom', 'no_split', 'noSplit'] as const).map((key) => ({
    name: 'new MemPool', param: `options.${key}`, valid: kinds.optionalBool,
    call: (v: unknown) => new MemPool({ [key]: v }),
  })),
  { name: 'use_mem_pool', param: 'pool', valid: kinds.none, extra: () => [S.released, Object.create(MemPool.prototype), { id: [0, 1] }], call: (v) => use_mem_pool(v as MemPool, () => 1) },
  { name: 'use_mem_pool', param: 'fn', valid: kinds.fn, call: (v) => use_mem_pool(S.pool, v as () => void) },
  { name: 'pool.snapshot', param: 'options', valid: kinds.options, extra: badOptions(['includeTraces']), call: (v) => S.pool.snapshot(v as never) },
  { name: 'pool.snapshot', param: 'options.includeTraces', valid: kinds.optionalBool, call: (v) => S.pool.snapshot({ includeTraces: v as boolean }) },
  { name: 'MemPool methods', param: 'pool', valid: kinds.none, extra: () => [S.released, Object.create(MemPool.prototype)], call: (v) => MemPool.prototype.release.call(v as MemPool) },
  // monitoring
  // Valid options are never tried here: they would register on the default registry or listen.
  { name: 'monitoring.registerPrometheus', param: 'options|registry', valid: kinds.options, extra: () => [{ registry: {} }, { registy: 1 }],
    call: (v) => monitoring.registerPrometheus(v as never) },
  { name: 'monitoring.registerOpenTelemetry', param: 'meter', valid: kinds.none, call: (v) => monitoring.registerOpenTelemetry(v as never) },
  { name: 'monitoring.serveMetrics', param: 'options', valid: kinds.options, extra: badOptions(['port', 'host', 'path']), call: (v) => monitoring.serveMetrics(v as never) },
  { name: 'monitoring.serveMetrics', param: 'options.port', valid: (v) => v === undefined, extra: () => [70_000, -1, 1.5], call: (v) => monitoring.serveMetrics({ port: v as number }) },
  // files and codecs
  { name: 'loadSnapshot', param: 'path|file', valid: kinds.none, extra: () => ['/dev/zero', '/', '/nonexistent.pickle', 0, 1], call: (v) => loadSnapshot(v as string) },
  { name: 'loadSnapshot', param: 'options', valid: kinds.options, extra: () => [{ maxBytes: 0 }, { maxbytes: 5 }], call: (v) => loadSnapshot('/nonexistent.pickle', v as never) },
  { name: 'parseSnapshot', param: 'bytes|snapshot', valid: kinds.none, extra: () => [Buffer.from('{"segments":1}'), Buffer.alloc(0)], call: (v) => parseSnapshot(v as Uint8Array) },
  { name: 'encodeSnapshot', param: 'format', valid: (v) => v === undefined, extra: () => ['xml', 'PICKLE'], call: (v) => encodeSnapshot(S.snap, v as never) },
  { name: 'encodeSnapshot', param: 'snapshot', valid: snapKind, extra: badSnapshots, call: (v) => encodeSnapshot(v) },
  { name: 'formatSize', param: 'bytes', valid: (v) => typeof v === 'number' && Number.isFinite(v), call: (v) => formatSize(v as number) },
  // analysis and replay: the snapshot argument of each, then their other parameters
  ...([
    ['summarize', (s: unknown) => analysis.summarize(s as Snapshot)],
    ['fragmentation', (s: unknown) => analysis.fragmentation(s as Snapshot)],
    ['diffSnapshots (a)', (s: unknown) => analysis.diffSnapshots(s as Snapshot, S.snap)],
    ['diffSnapshots (b)', (s: unknown) => analysis.diffSnapshots(S.snap, s as Snapshot)],
    ['regionTotals', (s: unknown) => analysis.regionTotals(s as Snapshot)],
    ['findLeaks', (s: unknown) => analysis.findLeaks(s as Snapshot)],
    ['defaultMarker', (s: unknown) => analysis.defaultMarker(s as Snapshot, 0)],
    ['replay.replayOnSim', (s: unknown) => replay.replayOnSim(s as Snapshot)],
    ['replay.settingsOf', (s: unknown) => replay.settingsOf(s as Snapshot)],
    ['timeline', (s: unknown) => analysis.timeline(s as Snapshot)],
    ['inferInitialLive', (s: unknown) => analysis.inferInitialLive(s as Snapshot, 0)],
    ['reservedAtStart', (s: unknown) => analysis.reservedAtStart(s as Snapshot, 0)],
    ['orderKeyOf', (s: unknown) => analysis.orderKeyOf(s as Snapshot, 0)],
    ['isExactlyOrdered', (s: unknown) => analysis.isExactlyOrdered(s as Snapshot, 0)],
  ] as const).map(([f, call]): Call => ({ name: f.includes('.') ? f : `analysis.${f}`, param: 'snapshot|a|b|segments|device_traces|external_annotations|top level', valid: snapKind, extra: badSnapshots, call })),
  ...([
    ['regionTotals', (d: unknown) => analysis.regionTotals(S.snap, d as number)],
    ['defaultMarker', (d: unknown) => analysis.defaultMarker(S.snap, d as number)],
    ['timeline', (d: unknown) => analysis.timeline(S.snap, d as number)],
    ['inferInitialLive', (d: unknown) => analysis.inferInitialLive(S.snap, d as number)],
    ['reservedAtStart', (d: unknown) => analysis.reservedAtStart(S.snap, d as number)],
    ['orderKeyOf', (d: unknown) => analysis.orderKeyOf(S.snap, d as number)],
    ['regionWindows', (d: unknown) => analysis.regionWindows([], d as number)],
  ] as const).map(([f, call]): Call => ({ name: `analysis.${f}`, param: 'device', valid: (v) => v === undefined || isInt(v, 0, 2 ** 31 - 1), call })),
  { name: 'analysis.fragmentation', param: 'options', valid: kinds.options, extra: () => [{ mapwidth: 5 }, { mapWidth: 0 }], call: (v) => analysis.fragmentation(S.snap, v as never) },
  { name: 'analysis.blockMap', param: 'segment', valid: kinds.none, extra: () => [{ address: 0, total_size: 1, blocks: [{}] }], call: (v) => analysis.blockMap(v as never, 10) },
  { name: 'analysis.blockMap', param: 'width', valid: kinds.width, call: (v) => analysis.blockMap(S.snap.segments[0]!, v as number) },
  { name: 'analysis.diffSnapshots', param: 'options', valid: kinds.options, extra: () => [{ dpeth: 3 }, { depth: 0 }, { device: -1 }], call: (v) => analysis.diffSnapshots(S.snap, S.snap, v as never) },
  { name: 'analysis.findLeaks', param: 'options', valid: kinds.options, extra: () => [{ minSteps: NaN }, { minsteps: 2 }, { marker: 5 }, { depth: 0 }, { device: 'x' }],
    call: (v) => analysis.findLeaks(S.snap, v as never) },
  { name: 'replay.replayOnSim', param: 'options|config', valid: kinds.options,
    extra: () => [{ settings: 'bogus:1' }, { settings: 5 }, { capacityBytes: -1 }, { capcityBytes: 1 }, { onProgress: 5 }, { device: 1.5 }],
    call: (v) => replay.replayOnSim(S.snap, v as never) },
  { name: 'replay.whatIf', param: 'snapshot|a|b|segments|device_traces|external_annotations|top level|path|file', valid: snapKind,
    extra: () => [...badSnapshots(), '/nonexistent.pickle'], call: (v) => replay.whatIf(v as never) },
  { name: 'replay.whatIf', param: 'options|config|settings|workers|maxBytes', valid: kinds.options,
    extra: () => [{ settings: ['bogus:1'] }, { settings: 'x' }, { workers: 0 }, { wrkers: 1 }, { capacityBytes: -1 }, { maxBytes: 0 }],
    call: (v) => replay.whatIf(S.snap, v as never) },
  { name: 'analysis.regionWindows', param: 'annotations', valid: snapKind, extra: () => [[{ device: 0, name: 'a', stage: 'X', time_us: 1 }], [5]], call: (v) => analysis.regionWindows(v as never, 0) },
  { name: 'analysis.regionWindows', param: 'key', valid: kinds.optionalFn, call: (v) => analysis.regionWindows([], 0, v as never) },
  ...(['meaningfulFrames', 'topFrame', 'stackKey'] as const).map((f): Call => ({
    name: `analysis.${f}`, param: 'frames', valid: (v) => v === undefined || (Array.isArray(v) && v.length === 0),
    extra: () => [[{ filename: 1, line: 1, name: 'x' }], [null]], call: (v) => analysis[f](v as never),
  })),
  { name: 'analysis.stackKey', param: 'depth', valid: (v) => v === undefined || isInt(v, 1, 1000), call: (v) => analysis.stackKey([], v as number) },
];

async function attempt(call: Call, value: unknown): Promise<unknown> {
  try {
    await call.call(value);
  } catch (e) {
    return e;
  }
  return undefined;
}

const shown = (v: unknown) => {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'symbol' || typeof v === 'function') return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

describe('every public function refuses every wrong value, with a code, changing nothing', () => {
  it.each(CALLS.map((c) => [`${c.name} (${c.param.split('|')[0]})`, c] as const))('%s', async (_label, c) => {
    const values = [...WRONG.filter((v) => !c.valid(v)), ...(c.extra?.() ?? [])];
    expect(values.length).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const v of values) {
      const before = fingerprint();
      const err = await attempt(c, v) as (Error & { code?: unknown }) | undefined;
      const after = fingerprint();
      const label = `${c.name} with ${c.param.split('|')[0]} = ${shown(v)}`;
      if (err === undefined) problems.push(`${label}: accepted`);
      else if (typeof err !== 'object' || err === null) problems.push(`${label}: threw a non-error ${String(err)}`);
      else if (typeof err.code !== 'string' || !/^ERR_[A-Z_]+$/.test(err.code)) problems.push(`${label}: uncoded ${err.name}: ${err.message}`);
      else if (err.code !== 'ERR_CUDA_OUT_OF_MEMORY' && !new RegExp(c.param.replace(/[.()]/g, (m) => `\\${m}`), 'i').test(err.message)) {
        problems.push(`${label}: message does not name the parameter: ${err.message}`);
      }
      if (before !== after) problems.push(`${label}: state changed`);
    }
    expect(problems).toEqual([]);
  });

  it('covers every export of the memory, cuda, analysis and replay modules', () => {
    const named = new Set(CALLS.map((c) => c.name.split(' ')[0]!));
    const argless = new Set(['cuda.isAvailable', 'cuda.probe', 'cuda.currentDevice', 'cuda.deviceCount', 'cuda.runtimeInfo',
      'memory.get_allocator_settings', 'memory.MemPool', 'memory.use_mem_pool', 'cuda.Stream', 'cuda.DeviceBuffer',
      'memory.max_memory_cached', 'memory.memory_cached', 'monitoring.readSamples', 'monitoring.otelName',
      'memory.host_memory_stats', 'memory.host_memory_stats_as_nested_dict', 'memory.reset_peak_host_memory_stats',
      'memory.reset_accumulated_host_memory_stats', 'memory.empty_host_cache', 'cuda.HostBuffer', 'compute.compilerInfo', 'compute.blasInfo',
      'compute.Module', 'compute.Kernel', 'compute.Event', 'compute.BufferView', 'compute.CudaGraph', 'compute.GraphPool', 'cuda.ipc_collect', 'interop.allocatorApi', 'memory.get_allocator_backend',
      'memory._get_memory_metadata']);
    const missing: string[] = [];
    for (const [mod, ns] of [['memory', memory], ['cuda', cuda], ['analysis', analysis], ['replay', replay], ['monitoring', monitoring], ['compute', compute], ['interop', interop]] as const) {
      for (const [k, v] of Object.entries(ns)) {
        const name = `${mod}.${k}`;
        // analysis's deprecated aliases are replay's own functions, covered under replay.
        if (mod === 'analysis' && v === (replay as Record<string, unknown>)[k]) continue;
        if (typeof v === 'function' && !named.has(name) && !argless.has(name)) missing.push(name);
      }
    }
    expect(missing).toEqual([]);
  });
});
