// One what-if row from a replay's report: what `cca replay --what-if` tabulates per setting and
// the viewer's what-if panel shows, made in one place so the two agree.
import type { ReplayReport } from './report.js';

export interface WhatIfRow {
  /** The settings replayed ('' for the defaults). */
  settings: string;
  /** True for the recorded settings' row. */
  recorded: boolean;
  peakReserved: number;
  endReserved: number;
  /** Segments allocated (device mallocs) during the replay. */
  deviceMallocs: number;
  largestFreeAtPeak: number;
  fragmentationAtPeak: number;
  /** Of the recorded OOMs, how many happen under these settings too. */
  ooms: { recorded: number; here: number };
  /** Set when an allocation the program made does not fit under these settings: it stops there. */
  stoppedAt: number | null;
  /** Wall time of this replay. */
  ms: number;
}

export function whatIfRow(settings: string, recorded: boolean, r: ReplayReport, ms: number): WhatIfRow {
  return {
    settings, recorded, peakReserved: r.ours.peakReserved, endReserved: r.ours.endReserved,
    deviceMallocs: r.ours.segmentGrowths, largestFreeAtPeak: r.oursAtPeak.largestFreeBlock,
    fragmentationAtPeak: r.oursAtPeak.fragmentation, ooms: { recorded: r.ooms.recorded, here: r.ooms.reproduced },
    stoppedAt: r.oom ? r.oom.index : null, ms,
  };
}

