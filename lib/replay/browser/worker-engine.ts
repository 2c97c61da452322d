// The wasm engine in the viewer's Web Worker (scripts/build-viewer.mjs puts this in place of
// lib/replay/wasm-engine.ts): the engine's script, inlined in the page, runs before the
// worker's bundle and leaves its factory as a global; it compiles synchronously, as in Node.
import { wasmEngineOf, type CcaModule } from '../wasm-port.js';

declare const createCcaEngine: (m: object) => unknown;

export const wasmEngine = wasmEngineOf(() => {
  const m = {} as CcaModule;
  createCcaEngine(m);
  return m;
});
