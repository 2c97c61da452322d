// The cache a history began on, rebuilt on the simulated driver before the first entry is
// replayed (its layout read from the recording by start-layout.ts).
import { CudaOutOfMemoryError } from '../errors.js';
import { poolKey } from '../snapshot/pool-id.js';
import type { SimDriver } from './driver.js';
import type { Recording } from './recording.js';
import type { ReplayReport } from './report.js';
import { lostSegmentAlloc, placementOf } from './start-layout.js';
import type { TraceEntry } from '../snapshot/types.js';

/** The start rebuilt on the driver, and what it took. */
export interface RebuiltStart {
  report: ReplayReport['start'];
  /** Bytes of the allocations live at the start, and start segments holding none of them. */
  bytes: number;
  freeSegments: number;
  /** The segment_alloc the ring lost before its first entry, if it did (firstAllocSegment). */
  lost: TraceEntry | null;
  /** The start does not fit the device. */
  oom: ReplayReport['oom'];
}

/**
 * Rebuilds the recording's start: its segments placed as recorded with their live blocks at
 * their offsets, then the live allocations no segment holds, allocated in address order
 * (all of them with expandable segments, which are not placed).
 */
export function rebuildStart(rec: Recording, driver: SimDriver, expandable: boolean): RebuiltStart {
  const report = { segments: 0, placed: 0, sizedFromRequest: expandable ? 0 : rec.start.sizedFromRequest, allocated: 0, lostSegmentAlloc: false };
  const out: RebuiltStart = { report, bytes: 0, freeSegments: 0, lost: null, oom: null };
  const unplaced = expandable ? [...rec.initial.keys()] : [...rec.start.unplaced];
  const segments = expandable ? [] : rec.start.segments;
  const first = expandable ? undefined : segments[rec.firstSegment];
  try {
    let firstBase: number | null = null;
    for (const seg of segments) {
      const base = driver.place(seg.size, seg.stream, seg.pool, seg.small, placementOf(seg), seg.live.map((b) => rec.initialSlot.get(b.address)!));
      if (base === null) {
        // A recording whose sizes our allocator could not have made (not 512-byte blocks, a
        // small segment not of 2 MiB): its live allocations are allocated instead.
        unplaced.push(...seg.live.map((b) => b.address));
        continue;
      }
      for (const b of seg.live) out.bytes += b.requested;
      if (seg === first) firstBase = base;
      if (seg.live.length === 0) out.freeSegments++;
      report.segments++;
      report.placed += seg.live.length;
    }
    if (first && firstBase !== null) {
      const e = rec.trace[0]!;
      if (driver.plan(e.size, e.stream, driver.pool(poolKey(e.pool_id))).cached?.ptr !== firstBase) {
        driver.unplace(firstBase);
        out.lost = lostSegmentAlloc(first, e);
        report.lostSegmentAlloc = true;
        out.freeSegments--;
        report.segments--;
      }
    }
    for (const addr of unplaced.sort((a, b) => a - b)) {
      const l = rec.initial.get(addr)!;
      driver.alloc(rec.initialSlot.get(addr)!, l.pool, l.size, l.stream);
      out.bytes += l.size;
      report.allocated++;
    }
  } catch (err) {
    if (!(err instanceof CudaOutOfMemoryError)) throw err;
    // The state the history started from does not fit: index -1, before the first entry.
    out.oom = { index: -1, size: err.requested, message: err.message };
  }
  return out;
}
