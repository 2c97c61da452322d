// The metrics every exporter publishes (Prometheus, OpenTelemetry), read in one native call
// for all devices (no trace entry read, no block walked, no per-block object), one for
// the native clients' figures (68 ns when there are none) and one per device for the
// labels' (memory_stats_by_tag), and named once here:
// docs/monitoring.md's table is this list.
import { native } from '../native.js';
import { tags } from '../history/stack-store.js';

export type Pool = 'all' | 'small_pool' | 'large_pool';
export const POOLS: readonly Pool[] = ['all', 'small_pool', 'large_pool'];

export interface MetricDefinition {
  /** Prometheus name (OpenTelemetry uses the same with dots: cca.allocated, unit By). */
  name: string;
  help: string;
  kind: 'gauge' | 'counter';
  unit: 'bytes' | 'ratio' | 'count';
  /** Labels: device always; pool for per-pool figures; client or tag for one row of those. */
  perPool: boolean;
  by?: 'client' | 'tag';
  /** PyTorch's memory_stats() key it mirrors ({pool} per pool), or how it is derived. */
  mirrors: string;
  value(s: DeviceSample, pool: Pool): number | undefined;
  /** A per-client or per-tag metric's value for one row. */
  rowValue?(r: LabelSample): number;
}

/** What one native client name (the C ABI, interop.md), or one tag, holds on a device. */
export interface LabelSample {
  name: string;
  bytes: number;
  allocations: number;
}

/**
 * Tags with their own series, by current bytes; the rest are summed under tag="other", so
 * a label per request id cannot flood a Prometheus server.
 */
export const TAG_SERIES = 20;

/** One device's reading. */
export interface DeviceSample {
  device: number;
  stat(key: string): number;
  largestFree(pool: Pool): number;
  historyEntries: number;
  /** 0 while history is off. */
  historyCapacity: number;
  /** What the device reports free (other processes' use counts against it) and in all; NaN
   *  when the driver cannot answer. */
  deviceFree: number;
  deviceTotal: number;
  /** The memory fraction's share of the device (the whole device when none is set). */
  memoryLimit: number;
  clients: LabelSample[];
  /** The TAG_SERIES tags holding the most (current bytes > 0), then "other" for the rest. */
  tags: LabelSample[];
}

const stat = (key: string) => (s: DeviceSample, pool: Pool) => s.stat(key.replace('{pool}', pool));

function fragmentation(s: DeviceSample, pool: Pool): number {
  // Free cached memory is what segments hold beyond their active blocks; the share of it
  // that a single request cannot use is the external fragmentation (as in analysis.fragmentation).
  const free = s.stat(`reserved_bytes.${pool}.current`) - s.stat(`active_bytes.${pool}.current`);
  return free > 0 ? 1 - Math.min(free, s.largestFree(pool)) / free : 0;
}

const bytes = (name: string, key: string, what: string): MetricDefinition[] => [
  { name: `cca_${name}_bytes`, help: `${what} (current)`, kind: 'gauge', unit: 'bytes', perPool: true, mirrors: `${key}.{pool}.current`, value: stat(`${key}.{pool}.current`) },
  { name: `cca_${name}_peak_bytes`, help: `${what} (peak since the last reset_peak_memory_stats)`, kind: 'gauge', unit: 'bytes', perPool: true, mirrors: `${key}.{pool}.peak`, value: stat(`${key}.{pool}.peak`) },
];

export const METRICS: readonly MetricDefinition[] = [
  ...bytes('allocated', 'allocated_bytes', 'Bytes in live allocations (rounded block sizes)'),
  ...bytes('reserved', 'reserved_bytes', 'Bytes of device memory the allocator holds in segments (what nvidia-smi sees)'),
  ...bytes('active', 'active_bytes', 'Bytes in active blocks: live, or freed but waiting for other streams'),
  ...bytes('requested', 'requested_bytes', 'Bytes the callers asked for (unrounded)'),
  ...bytes('inactive_split', 'inactive_split_bytes', 'Bytes in free blocks split off a segment that is partly in use'),
  { name: 'cca_allocations', help: 'Live allocations', kind: 'gauge', unit: 'count', perPool: true, mirrors: 'allocation.{pool}.current', value: stat('allocation.{pool}.current') },
  { name: 'cca_segments', help: 'Segments held (device allocations)', kind: 'gauge', unit: 'count', perPool: true, mirrors: 'segment.{pool}.current', value: stat('segment.{pool}.current') },
  { name: 'cca_allocations_total', help: 'Allocations made', kind: 'counter', unit: 'count', perPool: true, mirrors: 'allocation.{pool}.allocated', value: stat('allocation.{pool}.allocated') },
  { name: 'cca_largest_free_block_bytes', help: 'The largest free cached block: the biggest request served without a new segment', kind: 'gauge', unit: 'bytes', perPool: true, mirrors: '(not in PyTorch) largest inactive block', value: (s, p) => s.largestFree(p) },
  { name: 'cca_external_fragmentation_ratio', help: 'Share of free cached memory outside the largest free block (0: none; near 1: scattered)', kind: 'gauge', unit: 'ratio', perPool: true, mirrors: '(not in PyTorch) 1 - largest free / (reserved - active)', value: fragmentation },
  { name: 'cca_alloc_retries_total', help: 'Allocations that released the cache and retried after a failed device malloc', kind: 'counter', unit: 'count', perPool: false, mirrors: 'num_alloc_retries', value: stat('num_alloc_retries') },
  { name: 'cca_ooms_total', help: 'Out-of-memory errors raised', kind: 'counter', unit: 'count', perPool: false, mirrors: 'num_ooms', value: stat('num_ooms') },
  { name: 'cca_oom_rejections_total', help: 'Allocations refused before asking the device (throw_on_cudamalloc_oom with a memory fraction)', kind: 'counter', unit: 'count', perPool: false, mirrors: 'num_oom_rejections', value: stat('num_oom_rejections') },
  { name: 'cca_device_mallocs_total', help: 'Device allocations (cudaMalloc or VMM maps)', kind: 'counter', unit: 'count', perPool: false, mirrors: 'num_device_alloc', value: stat('num_device_alloc') },
  { name: 'cca_device_frees_total', help: 'Device frees (cudaFree or VMM unmaps)', kind: 'counter', unit: 'count', perPool: false, mirrors: 'num_device_free', value: stat('num_device_free') },
  { name: 'cca_device_free_bytes', help: 'Device memory free as the driver reports it (what other processes use counts against it)', kind: 'gauge', unit: 'bytes', perPool: false, mirrors: 'torch.cuda.mem_get_info()[0]', value: (s) => (Number.isNaN(s.deviceFree) ? undefined : s.deviceFree) },
  { name: 'cca_device_total_bytes', help: 'Device memory in all, as the driver reports it', kind: 'gauge', unit: 'bytes', perPool: false, mirrors: 'torch.cuda.mem_get_info()[1]', value: (s) => (Number.isNaN(s.deviceTotal) ? undefined : s.deviceTotal) },
  { name: 'cca_memory_limit_bytes', help: 'The most this allocator may reserve: the memory fraction\'s share of the device (all of it when none is set)', kind: 'gauge', unit: 'bytes', perPool: false, mirrors: 'set_per_process_memory_fraction() x total', value: (s) => (Number.isNaN(s.memoryLimit) ? undefined : s.memoryLimit) },
  { name: 'cca_history_entries', help: 'Entries in the history ring (only while recording)', kind: 'gauge', unit: 'count', perPool: false, mirrors: '(not in PyTorch) trace ring size', value: (s) => (s.historyCapacity > 0 ? s.historyEntries : undefined) },
  { name: 'cca_history_capacity_entries', help: 'Entries the history ring holds before it wraps (only while recording)', kind: 'gauge', unit: 'count', perPool: false, mirrors: 'allocator_settings.trace_alloc_max_entries', value: (s) => (s.historyCapacity > 0 ? s.historyCapacity : undefined) },
  { name: 'cca_client_allocated_bytes', help: 'Bytes a native client (by name) holds in live allocations, as asked for', kind: 'gauge', unit: 'bytes', perPool: false, by: 'client', mirrors: 'clients.{client}.allocated_bytes.current', value: () => undefined, rowValue: (c) => c.bytes },
  { name: 'cca_client_allocations', help: 'Live allocations of a native client (by name)', kind: 'gauge', unit: 'count', perPool: false, by: 'client', mirrors: 'clients.{client}.allocation.current', value: () => undefined, rowValue: (c) => c.allocations },
  { name: 'cca_tag_allocated_bytes', help: `Bytes in live allocations per label (tag, _set_memory_metadata); the ${TAG_SERIES} largest, the rest as tag="other"`, kind: 'gauge', unit: 'bytes', perPool: false, by: 'tag', mirrors: 'memory_stats_by_tag()[tag].allocated_bytes.current', value: () => undefined, rowValue: (t) => t.bytes },
  { name: 'cca_tag_allocations', help: `Live allocations per label; the ${TAG_SERIES} largest by bytes, the rest as tag="other"`, kind: 'gauge', unit: 'count', perPool: false, by: 'tag', mirrors: 'memory_stats_by_tag()[tag].allocation.current', value: () => undefined, rowValue: (t) => t.allocations },
];

// One device's tags with live memory: the TAG_SERIES holding the most by name, the rest
// (and a label that is itself called "other") summed as "other".
function tagSamples(device: number): LabelSample[] {
  const rows = native.tagStats(device);
  const live: LabelSample[] = [];
  for (let i = 0; i < rows.length; i += 7) {
    if (rows[i + 1]! > 0) live.push({ name: tags.name(rows[i]!), bytes: rows[i + 1]!, allocations: rows[i + 5]! });
  }
  if (live.length <= TAG_SERIES) return live;
  live.sort((a, b) => b.bytes - a.bytes);
  const other = { name: 'other', bytes: 0, allocations: 0 };
  const named: LabelSample[] = [];
  live.forEach((t, i) => {
    if (i < TAG_SERIES && t.name !== 'other') {
      named.push(t);
    } else {
      other.bytes += t.bytes;
      other.allocations += t.allocations;
    }
  });
  return [...named, other];
}

/** @internal The figures native monitorSample writes after each device's stats (memory_functions.cpp's kMonitorExtras): largest free small, large; history entries, capacity; device free, total; the memory limit. */
export const MONITOR_EXTRAS = 7;
const EXTRAS = MONITOR_EXTRAS;
let keys: Map<string, number> | undefined;
let buffer: Float64Array | undefined;

/** Every device's figures: the stats in one native call (its buffer reused between readings), then the clients' and labels'. */
export function readSamples(): DeviceSample[] {
  if (!keys) keys = new Map(native.statKeys().map((k, i) => [k, i]));
  const n = keys.size;
  buffer = native.monitorSample(buffer);
  const data = buffer;
  const devices = data.length / (n + EXTRAS);
  const clients: LabelSample[][] = Array.from({ length: devices }, () => []);
  for (const c of native.clients()) clients[c.device]?.push({ name: c.name, bytes: c.bytes, allocations: c.allocations });
  const out: DeviceSample[] = [];
  for (let d = 0; d < devices; d++) {
    const base = d * (n + EXTRAS);
    const small = data[base + n]!;
    const large = data[base + n + 1]!;
    out.push({
      device: d,
      stat: (key) => data[base + keys!.get(key)!]!,
      largestFree: (pool) => (pool === 'small_pool' ? small : pool === 'large_pool' ? large : Math.max(small, large)),
      historyEntries: data[base + n + 2]!,
      historyCapacity: data[base + n + 3]!,
      deviceFree: data[base + n + 4]!,
      deviceTotal: data[base + n + 5]!,
      memoryLimit: data[base + n + 6]!,
      clients: clients[d]!,
      tags: tagSamples(d),
    });
  }
  return out;
}
