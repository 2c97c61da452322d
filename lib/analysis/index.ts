// Analyses of snapshots (ours or PyTorch's), functions of a snapshot only: what the CLI's
// summary, frag, diff and leaks print, as data. (Replay is its own namespace: replay/.)
export { summarize, type DeviceSummary } from './summary.js';
export {
  fragmentation, blockMap, type FragmentationReport, type PoolFragmentation, type SegmentFragmentation,
} from './fragmentation.js';
export {
  diffSnapshots, regionTotals, regionWindows, type DiffOptions, type GroupDelta, type RegionDelta, type RegionTotals,
  type SnapshotDiff,
} from './diff.js';
export { findLeaks, defaultMarker, type LeakGroup, type LeakOptions, type LeakReport } from './leaks.js';
export { timeline, inferInitialLive, reservedAtStart, type Timeline, type LiveAllocation } from './timeline.js';
export { meaningfulFrames, stackKey, topFrame } from './frames-api.js';
export { orderKeyOf, isExactlyOrdered, type OrderKey, type Ordered } from './order.js';
