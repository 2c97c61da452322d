// Analyses of snapshots (ours or PyTorch's): what the CLI's summary, frag, diff, leaks and
// replay print, as data.
export { summarize, type DeviceSummary } from './summary.js';
export {
  fragmentation, blockMap, type FragmentationReport, type PoolFragmentation, type SegmentFragmentation,
} from './fragmentation.js';
export {
  diffSnapshots, regionTotals, regionWindows, type DiffOptions, type GroupDelta, type RegionDelta, type RegionTotals,
  type SnapshotDiff,
} from './diff.js';
export { findLeaks, defaultMarker, type LeakGroup, type LeakOptions, type LeakReport } from './leaks.js';
export { replayOnSim } from '../replay/replay.js';
export { settingsOf } from '../replay/reading.js';
export type { PeakState, ReplayOptions, ReplayReport, ReplaySide } from '../replay/report.js';
export { whatIf, WHAT_IF_SETTINGS, type WhatIfOptions, type WhatIfReport, type WhatIfRow } from '../replay/what-if.js';
export type { EngineName } from '../replay/engine.js';
export { timeline, inferInitialLive, reservedAtStart, type Timeline, type LiveAllocation } from './timeline.js';
export { meaningfulFrames, stackKey, topFrame } from './frames-api.js';
export { orderKeyOf, isExactlyOrdered, type OrderKey, type Ordered } from './order.js';
