// The seam between replay and the allocator it replays on: one interface, two engines. The
// native addon's simulated runtime (native-engine.ts) and the same C++ compiled to
// WebAssembly (wasm-engine.ts) answer every question replay asks the same way, so a report
// does not depend on which ran it (test/tools/replay-engines.test.ts replays every fixture on
// both). Replay uses the addon when it loads and the wasm engine otherwise; `engine` chooses.
import { InvalidArgumentError } from '../errors.js';
import { nativeStatus } from '../native.js';
import { nativeEngine } from './native-engine.js';
import { wasmEngine } from './wasm-engine.js';
import type { EngineName, ReplayEngine } from './engine-types.js';

export { ENGINE_NAMES } from './engine-types.js';
export type { EngineName, EnginePort, MallocPlan, ReplayEngine } from './engine-types.js';

let defaultEngine: ReplayEngine | undefined;

/** The engine named, or the native one where the addon loads and the wasm one elsewhere. */
export function replayEngine(name?: EngineName): ReplayEngine {
  if (name === undefined) return (defaultEngine ??= nativeStatus().available ? nativeEngine : wasmEngine);
  if (name === 'native') return nativeEngine;
  if (name === 'wasm') return wasmEngine;
  throw new InvalidArgumentError(`engine must be 'native' or 'wasm', not ${JSON.stringify(name)}`, 'ERR_CCA_INVALID_ENGINE');
}

// The size rules and the settings parser, for reading a recording before any replay: the
// same C++ in both engines, so the default one answers.
export const sizePolicy = (settings: string, size: number) => replayEngine().sizePolicy(settings, size);
export const settingsDict = (settings: string) => replayEngine().settingsDict(settings);
export const checkSettings = (settings: string) => replayEngine().checkSettings(settings);
