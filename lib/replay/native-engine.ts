// The native engine (engine.ts): replay on the addon's simulated runtime, and the only replay
// file that calls the addon. Opening one replaces this thread's runtime with one simulated
// device under the settings tried (what-if's workers each take devices of their own first,
// cuda.sim.isolate), so it refuses while memory is allocated.
import * as cuda from '../cuda.js';
import * as memory from '../memory.js';
import { deviceCount } from '../device.js';
import { InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { readSamples } from '../monitoring/metrics.js';
import { poolKey } from '../snapshot/pool-id.js';
import type { EnginePort, ReplayEngine } from './engine-types.js';

/** Replays run on device 0 of their simulated runtime, whichever device was recorded. */
const DEVICE = 0;

function open(capacityBytes: number, settings: string): EnginePort {
  for (let d = 0; d < deviceCount(); d++) {
    const held = memory.memory_allocated(d);
    if (held > 0) {
      throw new InvalidArgumentError(`replay replaces the allocator runtime, but device ${d} still has ` +
        `${held} bytes allocated: free them first, or run replay in its own process (cca replay)`, 'ERR_CCA_RUNTIME_BUSY');
    }
  }
  cuda.sim.configure({ devices: 1, capacityBytes });
  memory._set_allocator_settings(settings);
  return {
    settings: () => memory.get_allocator_settings() as Record<string, unknown>,
    streamCreate: () => native.streamCreate(DEVICE),
    streamDestroy: (h) => native.streamDestroy(DEVICE, h),
    streamSynchronize: (h) => native.streamSynchronize(DEVICE, h),
    poolCreate: () => native.poolCreate(DEVICE, false, false),
    poolBegin: (n) => native.poolBegin(DEVICE, n),
    poolEnd: (n) => native.poolEnd(DEVICE, n),
    poolRelease: (n) => native.poolRelease(DEVICE, n),
    alloc: (size, stream) => native.alloc(DEVICE, size, stream),
    free: (ptr) => native.free(DEVICE, ptr),
    recordStream: (ptr, stream) => native.recordStream(DEVICE, ptr, stream),
    emptyCache: () => native.emptyCache(DEVICE),
    holdStream: (h, held) => native.simHoldStream(DEVICE, h, held),
    completeStream: (h) => native.simCompleteStream(DEVICE, h),
    failNextMallocs: (count, afterBytes) => native.simFailNextMallocs(DEVICE, count, afterBytes),
    placeSegment: (size, stream, pool, small, layout) => native.placeSegment(DEVICE, size, stream, pool, small, layout),
    unplaceSegment: (base) => native.unplaceSegment(DEVICE, base),
    planMalloc: (size, stream, pool) => native.planMalloc(DEVICE, size, stream, pool),
    statKeys: () => native.statKeys(),
    statValue: (i) => native.statValue(DEVICE, i),
    resetPeaks: () => memory.reset_peak_memory_stats(DEVICE),
    freeState: () => {
      const [m] = readSamples();
      return { reserved: m!.stat('reserved_bytes.all.current'), active: m!.stat('active_bytes.all.current'), largestFree: m!.largestFree('all') };
    },
    emptyDefaultSegments: () => memory.memory_snapshot().filter((g) => g.device === DEVICE && !g.is_expandable &&
      poolKey(g.segment_pool_id) === 0 && g.blocks.every((b) => b.state === 'inactive' || b.state === 'active_pending_free'))
      .map((g) => ({ small: g.segment_type === 'small', stream: g.stream, size: g.total_size, address: g.address })),
    recordSegmentEvents: (maxEntries) => memory._record_memory_history({
      enabled: 'all', context: null, maxEntries,
      skipActions: ['alloc', 'free_requested', 'free_completed', 'snapshot', 'oom'],
    }),
    segmentEvents: () => memory._snapshot().device_traces[DEVICE] ?? [],
    validate: () => native.validate(DEVICE),
    close: () => memory._record_memory_history(null),
  };
}

export const nativeEngine: ReplayEngine = {
  name: 'native',
  sizePolicy: (settings, size) => native.sizePolicy(settings, size),
  settingsDict: (settings) => native.allocatorSettings(settings),
  checkSettings: (settings) => native.checkAllocatorSettings(settings),
  options: () => native.allocatorOptions(),
  open,
};
