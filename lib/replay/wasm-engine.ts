// The wasm engine in Node: the module native/wasm/ builds (dist/wasm/cca-engine.cjs, one file
// with the wasm inlined), required synchronously on first use, so replay stays synchronous on
// either engine. Each thread that uses it (what-if's workers) gets a module of its own.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AllocatorError } from '../errors.js';
import { wasmEngineOf, type CcaModule } from './wasm-port.js';

// Built into dist/wasm/, beside dist/replay/ where this file is built; from the sources
// (tests), the built copy.
const CANDIDATES = ['../wasm/cca-engine.cjs', '../../dist/wasm/cca-engine.cjs'];

/** Where the built module is, or null. */
export function wasmEnginePath(): string | null {
  for (const rel of CANDIDATES) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  return null;
}

function load(): CcaModule {
  const path = wasmEnginePath();
  if (path === null) {
    throw new AllocatorError('the wasm replay engine is not built (dist/wasm/cca-engine.cjs): run `npm run build:wasm` ' +
      'with emscripten installed (apt-get install emscripten), or replay on the native addon (--engine native)', 'ERR_CCA_WASM_UNAVAILABLE');
  }
  const create = createRequire(import.meta.url)(path) as (m: object) => unknown;
  // Compiled synchronously (-sWASM_ASYNC_COMPILATION=0): the object given is the module, ready.
  const m = {} as CcaModule;
  create(m);
  return m;
}

export const wasmEngine = wasmEngineOf(load);
