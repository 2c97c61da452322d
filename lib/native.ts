// The addon, loaded on first use (node-gyp-build: a matching prebuild, else the local build)
// and handed the JS error classes. Importing the package loads nothing: the snapshot tools
// (codecs, analysis, the viewer, `cca` on files) run where no addon can load; the first call
// into the live allocator loads it, or throws ERR_CCA_NATIVE_UNAVAILABLE saying what to do.
import { createRequire } from 'node:module';
import type { NativeBinding } from '../binding.js';
import { AllocatorError, errorFromNative } from './errors.js';
import { checkAddonLayout } from './snapshot/layout.js';

let failure: AllocatorError | undefined;
let loaded: NativeBinding | undefined;

function load(): NativeBinding {
  if (loaded !== undefined) return loaded;
  if (failure !== undefined) throw failure;
  const require = createRequire(import.meta.url);
  let addon: NativeBinding;
  try {
    addon = require('../binding.cjs') as NativeBinding;
  } catch (cause) {
    const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
    failure = new AllocatorError(
      'cuda-caching-allocator: the native addon could not be loaded on ' +
        `${process.platform}-${process.arch}${glibc ? ` (glibc ${glibc})` : ''}, Node ${process.versions.node}: ` +
        'tried a prebuild for this platform and a local build (build/Release). The live allocator (cuda, memory, ' +
        'compute, interop, MemPool, live monitoring) needs it; the snapshot tools (loadSnapshot, the codecs, ' +
        'analysis, the viewer, `cca` on files) do not. To get it, run `npm rebuild cuda-caching-allocator` in the ' +
        'project that depends on it (a source build needs cmake and a C++17 compiler, no CUDA toolkit). ' +
        `Cause: ${(cause as Error).message.split('\n')[0]}`,
      'ERR_CCA_NATIVE_UNAVAILABLE',
    );
    (failure as Error & { cause?: unknown }).cause = cause;
    throw failure;
  }
  addon.setErrorFactory(errorFromNative);
  checkAddonLayout(addon);
  native = loaded = addon;
  return addon;
}

/**
 * The addon. Until its first use a stand-in that loads it and answers from it; from then on
 * the binding is the addon itself, so a call costs what it did before loading was lazy.
 */
export let native: NativeBinding = new Proxy({} as NativeBinding, {
  get: (_target, key) => Reflect.get(load(), key),
  has: (_target, key) => Reflect.has(load(), key),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_target, key) => {
    const d = Reflect.getOwnPropertyDescriptor(load(), key);
    return d && { ...d, configurable: true };  // the stand-in's target has none of its own
  },
});

/** The addon itself, loaded now if it was not (ERR_CCA_NATIVE_UNAVAILABLE where it cannot load). */
export function loadNative(): NativeBinding {
  return load();
}

/** Whether the addon loads here, loading it if it has not been (for probes that must not throw). */
export function nativeStatus(): { available: true } | { available: false; error: AllocatorError } {
  try {
    load();
    return { available: true };
  } catch (e) {
    if (e instanceof AllocatorError && e.code === 'ERR_CCA_NATIVE_UNAVAILABLE') return { available: false, error: e };
    throw e;
  }
}
