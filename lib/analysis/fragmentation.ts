// Where the cache's free memory is and why it cannot be used or returned: per device, per
// pool and per segment. "External fragmentation" is 1 - largest free block / free bytes
// (0 when the free memory is one block); a request larger than the largest free block needs
// a new segment even when the free bytes would cover it.
import type { Segment, Snapshot } from '../snapshot/types.js';
import { checkOptions, segmentArg, snapshotArg } from './args.js';
import { checkInteger } from '../validate.js';

export interface SegmentFragmentation {
  device: number;
  address: number;
  segmentType: 'small' | 'large';
  stream: number;
  pool: string;
  total: number;
  allocated: number;
  free: number;
  freeBlocks: number;
  largestFree: number;
  external: number;
  /** Every block is free: empty_cache() returns the whole segment. */
  releasable: boolean;
  /** One character per width-th of the segment: '#' allocated, '~' pending free, '.' free. */
  map: string;
}

export interface PoolFragmentation {
  reserved: number;
  free: number;
  largestFree: number;
  external: number;
  /** 1 - sum(free_i^2) / (sum free_i)^2 over the free blocks: 0 for one block, near 1 for many equal small ones. */
  scatter: number;
}

export interface FragmentationReport {
  device: number;
  reserved: number;
  allocated: number;
  /** Allocated bytes minus what callers asked for: the rounding to 512 B and to size classes. */
  rounding: number;
  free: number;
  largestFree: number;
  external: number;
  /** 1 - sum(free_i^2) / (sum free_i)^2: unlike `external`, it sees how the rest is split too. */
  scatter: number;
  /** Free bytes in segments with no live block: what empty_cache() gives back. */
  releasable: number;
  /** Free bytes in segments that still hold a live block: kept until those are freed. */
  stranded: number;
  pools: { small: PoolFragmentation; large: PoolFragmentation };
  /** Segments with free memory, most free bytes first. */
  segments: SegmentFragmentation[];
}

const external = (free: number, largest: number): number => (free === 0 ? 0 : 1 - largest / free);
const scatter = (free: number, squares: number): number => (free === 0 ? 0 : 1 - squares / (free * free));

export function blockMap(segment: Segment, width: number): string {
  segment = segmentArg(segment);
  width = checkInteger('width', width, 1, 10_000);
  const cells = new Array<string>(width).fill('.');
  const weight = new Array<number>(width).fill(0);
  const cell = segment.total_size / width;
  for (const b of segment.blocks) {
    if (b.state === 'inactive') continue;
    const mark = b.state === 'active_allocated' ? '#' : '~';
    const start = b.address - segment.address;
    const end = start + b.size;
    // Clamped to the map: a block outside its segment (a corrupt or hand-made one) must not
    // walk from cell -10^12.
    for (let c = Math.max(0, Math.floor(start / cell)); c < width && c * cell < end; c++) {
      const covered = Math.min(end, (c + 1) * cell) - Math.max(start, c * cell);
      weight[c]! += covered;
      // A cell shows a live block once live bytes make up half of it.
      if (weight[c]! * 2 >= cell) cells[c] = mark;
    }
  }
  return cells.join('');
}

export function fragmentation(snapshot: Snapshot, options?: { mapWidth?: number }): FragmentationReport[] {
  snapshot = snapshotArg(snapshot);
  const o = checkOptions<{ mapWidth: number }>('fragmentation options', options, ['mapWidth']);
  const width = o.mapWidth === undefined ? 48 : checkInteger('options.mapWidth', o.mapWidth, 1, 10_000);
  const devices = [...new Set(snapshot.segments.map((s) => s.device))].sort((a, b) => a - b);
  return devices.map((device) => {
    const segs = snapshot.segments.filter((s) => s.device === device);
    const pools = {
      small: { reserved: 0, free: 0, largestFree: 0, external: 0, scatter: 0 },
      large: { reserved: 0, free: 0, largestFree: 0, external: 0, scatter: 0 },
    };
    const squares = { small: 0, large: 0 };
    const report: FragmentationReport = {
      device, reserved: 0, allocated: 0, rounding: 0, free: 0, largestFree: 0, external: 0, scatter: 0,
      releasable: 0, stranded: 0, pools, segments: [],
    };
    for (const s of segs) {
      let free = 0;
      let freeBlocks = 0;
      let largest = 0;
      let live = 0;
      for (const b of s.blocks) {
        if (b.state === 'inactive') {
          free += b.size;
          freeBlocks++;
          largest = Math.max(largest, b.size);
          squares[s.segment_type === 'small' ? 'small' : 'large'] += b.size * b.size;
        } else {
          live++;
          if (b.state === 'active_allocated' && b.requested_size > 0) report.rounding += b.size - b.requested_size;
        }
      }
      const pool = s.segment_type === 'small' ? pools.small : pools.large;
      pool.reserved += s.total_size;
      pool.free += free;
      pool.largestFree = Math.max(pool.largestFree, largest);
      report.reserved += s.total_size;
      report.allocated += s.allocated_size ?? 0;
      report.free += free;
      report.largestFree = Math.max(report.largestFree, largest);
      if (live === 0) report.releasable += free;
      else report.stranded += free;
      if (free > 0) {
        report.segments.push({
          device, address: s.address, segmentType: s.segment_type, stream: s.stream,
          pool: Array.isArray(s.segment_pool_id) ? `(${s.segment_pool_id.join(',')})` : '-',
          total: s.total_size, allocated: s.allocated_size ?? 0, free, freeBlocks, largestFree: largest,
          external: external(free, largest), releasable: live === 0, map: blockMap(s, width),
        });
      }
    }
    pools.small.external = external(pools.small.free, pools.small.largestFree);
    pools.large.external = external(pools.large.free, pools.large.largestFree);
    pools.small.scatter = scatter(pools.small.free, squares.small);
    pools.large.scatter = scatter(pools.large.free, squares.large);
    report.external = external(report.free, report.largestFree);
    report.scatter = scatter(report.free, squares.small + squares.large);
    report.segments.sort((a, b) => b.free - a.free || a.address - b.address);
    return report;
  });
}
