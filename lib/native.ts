// Loads the addon once per process (node-gyp-build: a matching prebuild, else the local
// build) and hands it the JS error classes. A load failure says what to do.
import { createRequire } from 'node:module';
import type { NativeBinding } from '../binding.js';
import { errorFromNative } from './errors.js';

function load(): NativeBinding {
  const require = createRequire(import.meta.url);
  try {
    return require('../binding.cjs') as NativeBinding;
  } catch (cause) {
    const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
    throw new Error(
      'cuda-caching-allocator: the native addon could not be loaded on ' +
        `${process.platform}-${process.arch}${glibc ? ` (glibc ${glibc})` : ''}, Node ${process.versions.node}. ` +
        'In the project that depends on it, run `npm rebuild cuda-caching-allocator` (it builds from source when ' +
        'no prebuild loads; that needs cmake and a C++17 compiler, no CUDA toolkit). ' +
        `Cause: ${(cause as Error).message.split('\n')[0]}`,
      { cause },
    );
  }
}

export const native: NativeBinding = load();
native.setErrorFactory(errorFromNative);
