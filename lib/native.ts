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
    throw new Error(
      'cuda-caching-allocator: the native addon could not be loaded. Build it with ' +
        '`npm run build:native` (needs cmake and a C++17 compiler; no CUDA toolkit is needed). ' +
        `Cause: ${(cause as Error).message}`,
      { cause },
    );
  }
}

export const native: NativeBinding = load();
native.setErrorFactory(errorFromNative);
