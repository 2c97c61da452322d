// Replay and what-if, as the package exports them (`replay`): a recorded history run again
// through our allocator on a simulated device, under its own settings or others.
export { replayOnSim } from './replay.js';
export { settingsOf } from './reading.js';
export type { PeakState, ReplayOptions, ReplayReport, ReplaySide } from './report.js';
export { whatIf, WHAT_IF_SETTINGS, type WhatIfOptions, type WhatIfReport, type WhatIfRow } from './what-if.js';
export { ENGINE_NAMES, type EngineName } from './engine.js';
