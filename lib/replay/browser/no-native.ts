// What the viewer's Web Worker bundle has for the addon (scripts/build-viewer.mjs puts this in
// place of lib/native.ts and lib/replay/native-engine.ts): none, so replay's default engine
// there is the wasm one.
import { AllocatorError } from '../../errors.js';
import type { ReplayEngine } from '../engine-types.js';

const unavailable = new AllocatorError('no native addon in a browser: the viewer replays on the wasm engine', 'ERR_CCA_NATIVE_UNAVAILABLE');

export function nativeStatus(): { available: false; error: AllocatorError } {
  return { available: false, error: unavailable };
}

const refuse = (): never => {
  throw unavailable;
};

export const nativeEngine: ReplayEngine = {
  name: 'native', sizePolicy: refuse, settingsDict: refuse, checkSettings: refuse, options: refuse, open: refuse,
};

/** The addon's binding: every use throws (modules the bundle takes along name it, replay calls none of it). */
export const native = new Proxy({}, { get: refuse });
