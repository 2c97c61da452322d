// The `analysis` namespace as the package exports it: analysis/'s functions of a snapshot,
// and replay's names it carried before replay became a namespace of its own, kept as
// deprecated aliases through 0.2.x (removed in 0.3.0). It sits on the entry floor because it
// reaches both; analysis/ itself never imports replay.
import * as replay from './replay/index.js';

export * from './analysis/index.js';

/** @deprecated Use `replay.replayOnSim` (removed in 0.3.0). */
export const replayOnSim = replay.replayOnSim;
/** @deprecated Use `replay.settingsOf` (removed in 0.3.0). */
export const settingsOf = replay.settingsOf;
/** @deprecated Use `replay.whatIf` (removed in 0.3.0). */
export const whatIf = replay.whatIf;
/** @deprecated Use `replay.WHAT_IF_SETTINGS` (removed in 0.3.0). */
export const WHAT_IF_SETTINGS = replay.WHAT_IF_SETTINGS;
/** @deprecated Use `replay.PeakState` (removed in 0.3.0). */
export type PeakState = replay.PeakState;
/** @deprecated Use `replay.ReplayOptions` (removed in 0.3.0). */
export type ReplayOptions = replay.ReplayOptions;
/** @deprecated Use `replay.ReplayReport` (removed in 0.3.0). */
export type ReplayReport = replay.ReplayReport;
/** @deprecated Use `replay.ReplaySide` (removed in 0.3.0). */
export type ReplaySide = replay.ReplaySide;
/** @deprecated Use `replay.WhatIfOptions` (removed in 0.3.0). */
export type WhatIfOptions = replay.WhatIfOptions;
/** @deprecated Use `replay.WhatIfReport` (removed in 0.3.0). */
export type WhatIfReport = replay.WhatIfReport;
/** @deprecated Use `replay.WhatIfRow` (removed in 0.3.0). */
export type WhatIfRow = replay.WhatIfRow;
/** @deprecated Use `replay.EngineName` (removed in 0.3.0). */
export type EngineName = replay.EngineName;
