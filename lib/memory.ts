/**
 * The `torch.cuda.memory` mirror. Names are PyTorch's (snake_case, the documented exception
 * to this package's camelCase) so code and habits carry over. Every function takes an
 * optional device index (default: the current device); sizes are bytes.
 */
import { native } from './native.js';
import { deviceCount, getDeviceProperties, resolveDevice } from './device.js';
import { renderSummary } from './summary.js';
import { checkBoolean, checkFraction, checkOptions, checkString, typeError } from './validate.js';
import { fullSnapshot, segmentsOf, type SnapshotOptions } from './history/snapshot-build.js';
import { formatFor, writeSnapshotFile, type WriteResult } from './snapshot/dump.js';
import { capture, recordMemoryHistory, sampleStack, type HistoryEnabled, type RecordHistoryOptions } from './history/record.js';
import { stacks } from './history/stack-store.js';
import { currentMetadata } from './history/metadata.js';
import type { Segment, Snapshot } from './snapshot/types.js';
import { markChecked } from './snapshot/check.js';
import { poolTupleOf } from './snapshot/pool-id.js';

export { annotate, type Region } from './history/annotations.js';
export { _get_memory_metadata, _set_memory_metadata, withMemoryMetadata } from './history/metadata.js';
export { _allocation_traceback, _annotate_memory } from './history/live-allocation.js';
export { caching_allocator_enable, caching_allocator_disabled } from './caching.js';
export { memory_stats_by_tag, type TagStats } from './tag-stats.js';
export { onTrace, type OnTraceOptions, type TraceBatch, type TraceSubscription } from './history/live-trace.js';
export { MemPool, use_mem_pool } from './mem-pool.js';
export { onOutOfMemory, dumpSnapshotOnOutOfMemory, type OutOfMemoryEvent } from './oom.js';

let keys: string[] | undefined;
const indexOf = new Map<string, number>();

function statKeys(): string[] {
  if (!keys) {
    keys = native.statKeys();
    keys.forEach((k, i) => indexOf.set(k, i));
  }
  return keys;
}

// The single-value getters (memory_allocated() & co.) ask for their one value.
function statValue(key: string, device: unknown): number {
  if (!keys) statKeys();
  return native.statValue(resolveDevice(device), indexOf.get(key)!);
}

/**
 * PyTorch's flat stats keys, sorted: `{allocation,segment,active,inactive_split,
 * allocated_bytes,reserved_bytes,active_bytes,inactive_split_bytes,requested_bytes}.
 * {all,small_pool,large_pool}.{current,peak,allocated,freed}`, `oversize_allocations.*`,
 * `oversize_segments.*`, `num_alloc_retries`, `num_ooms`, `num_sync_all_streams`,
 * `num_device_alloc`, `num_device_free`, `max_split_size` (-1 when unlimited), and the newer
 * `num_oom_rejections` (allocations refused by `throw_on_cudamalloc_oom`): 123 in all. Each
 * live private pool adds `reserved_bytes_by_private_pools.<a>_<b>.{all,small_pool,large_pool}.
 * {current,peak,allocated,freed}` as PyTorch does, `<a>_<b>` its id: `0_<n>` for a MemPool or
 * a shared graph pool, `<n>_0` for a CUDA graph's own pool. Where native code allocates through the
 * C ABI (interop), each client name adds `clients.<name>.{allocated_bytes,allocation}.
 * {current,peak}` and `.num_allocs`/`.num_frees`. Keys are sorted, as PyTorch's are.
 */
export function memory_stats(device?: number): Record<string, number> {
  const names = statKeys();
  const d = resolveDevice(device);
  const values = native.memoryStats(d);
  const out: Record<string, number> = {};
  for (let i = 0; i < names.length; i++) out[names[i]!] = values[i]!;
  // What native clients of the C ABI hold (not in PyTorch): clients.<name>.* per name.
  let extra = false;
  for (const c of native.clients()) {
    if (c.device !== d) continue;
    const k = `clients.${c.name}`;
    out[`${k}.allocated_bytes.current`] = c.bytes;
    out[`${k}.allocated_bytes.peak`] = c.bytesPeak;
    out[`${k}.allocation.current`] = c.allocations;
    out[`${k}.allocation.peak`] = c.allocationsPeak;
    out[`${k}.num_allocs`] = c.numAllocs;
    out[`${k}.num_frees`] = c.numFrees;
    extra = true;
  }
  const pools = native.poolReservedStats(d);
  for (let i = 0; i < pools.length; i += 13) {
    const id = poolTupleOf(pools[i]!);  // (n, 0) for a CUDA graph's own pool, as snapshots write it
    const k = `reserved_bytes_by_private_pools.${id[0]}_${id[1]}`;
    for (let p = 0; p < 3; p++) {
      for (let f = 0; f < 4; f++) out[`${k}.${POOL_NAMES[p]}.${FIELD_NAMES[f]}`] = pools[i + 1 + p * 4 + f]!;
    }
    extra = true;
  }
  // PyTorch's memory_stats() is sorted by key; the fixed keys already are.
  return extra ? sortedByKey(out) : out;
}

const POOL_NAMES = ['all', 'small_pool', 'large_pool'] as const;
const FIELD_NAMES = ['current', 'peak', 'allocated', 'freed'] as const;

function sortedByKey(stats: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(stats).sort()) out[key] = stats[key]!;
  return out;
}

export type NestedStats = { [key: string]: number | NestedStats };

/** The same stats nested at each dot: `{ allocated_bytes: { all: { current } } }`. */
export function memory_stats_as_nested_dict(device?: number): NestedStats {
  return nested(memory_stats(device));
}

function nested(flat: Record<string, number>): NestedStats {
  const out: NestedStats = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as NestedStats;
    node[parts[parts.length - 1]!] = value;
  }
  return out;
}

let hostKeys: string[] | undefined;

/**
 * The pinned host allocator's statistics, with PyTorch's keys: `allocations`,
 * `allocated_bytes` (blocks owned, cached ones included, at their rounded sizes),
 * `active_requests`, `active_bytes` (handed out and not yet reusable), each
 * `.{current,peak,allocated,freed}`; `num_host_alloc`, `num_host_free`; and
 * `host_alloc_time` / `host_free_time` `.{total,max,min,count,avg}` in microseconds.
 */
export function host_memory_stats(): Record<string, number> {
  const names = (hostKeys ??= native.hostStatKeys());
  const values = native.hostMemoryStats();
  const out: Record<string, number> = {};
  for (let i = 0; i < names.length; i++) out[names[i]!] = values[i]!;
  return out;
}

/** host_memory_stats() nested at each dot. */
export function host_memory_stats_as_nested_dict(): NestedStats {
  return nested(host_memory_stats());
}

/** Resets the peaks of the host allocator's statistics to their current values. */
export function reset_peak_host_memory_stats(): void {
  native.resetPeakHostStats();
}

/** Zeroes the host allocator's allocated/freed totals, its counters and its timings. */
export function reset_accumulated_host_memory_stats(): void {
  native.resetAccumulatedHostStats();
}

/** Returns the cached pinned blocks whose copies completed to the system. */
export function empty_host_cache(): void {
  native.emptyHostCache();
}

/** Bytes held by live allocations (`allocated_bytes.all.current`). */
export function memory_allocated(device?: number): number {
  return statValue('allocated_bytes.all.current', device);
}

export function max_memory_allocated(device?: number): number {
  return statValue('allocated_bytes.all.peak', device);
}

/** Bytes held by the allocator's segments: what the device (and nvidia-smi) sees us use. */
export function memory_reserved(device?: number): number {
  return statValue('reserved_bytes.all.current', device);
}

export function max_memory_reserved(device?: number): number {
  return statValue('reserved_bytes.all.peak', device);
}

/** Sets every peak to its current value. */
export function reset_peak_memory_stats(device?: number): void {
  native.resetPeakStats(resolveDevice(device));
}

/** Zeroes the allocated/freed totals and the counters (retries, OOMs, device calls). */
export function reset_accumulated_memory_stats(device?: number): void {
  native.resetAccumulatedStats(resolveDevice(device));
}

/**
 * Returns cached memory that no allocation uses to the device (after waiting for pending
 * cross-stream frees). Allocated memory is untouched. Without a device: every device.
 */
export function empty_cache(device?: number): void {
  const one = device === undefined ? -1 : resolveDevice(device);
  // As PyTorch's emptyCache: the call site's stack under context 'all', the label in force.
  const stackId = capture.level === 3 && sampleStack() ? stacks.capture(empty_cache) : 0;
  const tagId = currentMetadata.tagId;
  if (one === -1) {
    for (let d = 0; d < deviceCount(); d++) native.emptyCache(d, stackId, tagId);
  } else {
    native.emptyCache(one, stackId, tagId);
  }
}

/** `[free, total]` bytes as the device reports them. */
export function mem_get_info(device?: number): [number, number] {
  return native.memGetInfo(resolveDevice(device));
}

/** Caps this process's reserved memory at `fraction` of the device's total. */
export function set_per_process_memory_fraction(fraction: number, device?: number): void {
  native.setMemoryFraction(resolveDevice(device), checkFraction('fraction', fraction));
}

export function get_per_process_memory_fraction(device?: number): number {
  return native.getMemoryFraction(resolveDevice(device));
}

/** A text table of the stats, like torch.cuda.memory_summary(). */
export function memory_summary(device?: number, abbreviated = false): string {
  const d = resolveDevice(device);
  return renderSummary({
    device: d,
    deviceName: getDeviceProperties(d).name,
    stats: memory_stats(d),
    abbreviated: checkBoolean('abbreviated', abbreviated),
  });
}

/**
 * Applies a config string (PYTORCH_CUDA_ALLOC_CONF syntax) to every device at run time.
 * Options not named return to their defaults, as in PyTorch. Unknown keys throw
 * InvalidArgumentError (`ERR_CCA_INVALID_CONFIG`) and change nothing.
 */
export function _set_allocator_settings(settings: string): void {
  native.setAllocatorSettings(checkString('settings', settings));
}

/** The settings in force, as PyTorch's snapshot `allocator_settings` dict. */
export function get_allocator_settings(): Record<string, unknown> {
  return native.allocatorSettings();
}

/**
 * Checks every invariant of the allocator (blocks tile segments, free neighbours merged,
 * free blocks in exactly one pool, stats equal the sums over blocks). Returns null when
 * all hold, else the first broken one. For tests and debugging; it walks every block.
 */
export function check_invariants(device?: number): string | null {
  const problem = native.validate(resolveDevice(device));
  return problem === '' ? null : problem;
}

const SNAPSHOT_OPTIONS = ['mempoolId', 'includeTraces'] as const;

function checkSnapshotOptions(options: unknown): SnapshotOptions {
  const o = checkOptions<SnapshotOptions>('snapshot options', options, SNAPSHOT_OPTIONS);
  if (o.includeTraces !== undefined) checkBoolean('options.includeTraces', o.includeTraces);
  if (o.mempoolId !== undefined) {
    // MemPool ids are (0, n) with n a 32-bit id: anything else names no pool. (The native
    // filter is 32 bits; a larger n would wrap and pick another pool, or every segment.)
    const id = o.mempoolId as unknown;
    if (!Array.isArray(id) || id.length !== 2 || id[0] !== 0 || !Number.isInteger(id[1]) || id[1] < 1 || id[1] > 2 ** 32 - 1) {
      throw typeError('a MemPool id [0, n] with n from 1 to 2^32-1 (pool.id)', 'options.mempoolId', id);
    }
  }
  return o;
}

/**
 * The segments of every device, with their blocks (PyTorch's memory_snapshot()). This is
 * the monitoring path: it reads no history whatever `includeTraces` says (the history is
 * in _snapshot()), so its cost depends only on the number of segments and blocks.
 */
export function memory_snapshot(options?: SnapshotOptions): Segment[] {
  return segmentsOf(checkSnapshotOptions(options));
}

/** The whole snapshot dict: segments, device_traces, allocator_settings, external_annotations,
 *  host_segments and host_traces (pinned host memory; empty lists while its history is off). */
export function _snapshot(options?: SnapshotOptions): Snapshot {
  // Built here from the allocator's own records: the analyses need not check it again.
  return markChecked(fullSnapshot(checkSnapshotOptions(options)));
}

/**
 * Starts, changes or stops recording history, with PyTorch's semantics:
 * `_record_memory_history({ enabled: 'all', context: 'all', maxEntries: 100_000 })`,
 * `_record_memory_history(null)` to stop (and free the history), or the legacy
 * `_record_memory_history(true, { trace_alloc_max_entries: 1000 })`.
 */
export function _record_memory_history(
  enabled?: HistoryEnabled | boolean | RecordHistoryOptions,
  options?: Record<string, unknown>,
): void {
  recordMemoryHistory(enabled, options);
}

/**
 * Writes _snapshot() to a file memory_viz opens: a pickle (protocol 4, the opcodes its
 * reader knows), or JSON when the name ends in .json. Resolves with the bytes written.
 */
export async function _dump_snapshot(filename = 'dump_snapshot.pickle', options?: { format?: 'pickle' | 'json' }): Promise<WriteResult> {
  checkString('filename', filename);
  if (filename === '') throw typeError('a file name (.pickle, or .json for JSON)', 'filename', filename);
  const o = checkOptions<{ format: 'pickle' | 'json' }>('dump options', options, ['format']);
  if (o.format !== undefined && o.format !== 'pickle' && o.format !== 'json') throw typeError("'pickle' or 'json'", 'options.format', o.format);
  // Trace entries are decoded chunk by chunk as they are written: memory stays bounded by
  // the native records, not by a million JS objects.
  const snap = fullSnapshot({ lazyTraces: true });
  return writeSnapshotFile(snap, filename, o.format ?? formatFor(filename));
}

/** PyTorch's name for the allocator in use: always `'native'` (the caching allocator). */
export function get_allocator_backend(): 'native' {
  return 'native';
}
