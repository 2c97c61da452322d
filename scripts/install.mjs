// `npm install` step: use a prebuild (prebuilds/<platform>-<arch>/) or an existing build
// when one loads here; otherwise build the addon from source with cmake-js.
// (node-gyp-build's own CLI always falls back to `node-gyp rebuild`, and this project has no
// binding.gyp: it builds with CMake.)
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

function loads() {
  try {
    require('node-gyp-build')(root);
    return true;
  } catch {
    return false;
  }
}

if (process.env.CCA_BUILD_FROM_SOURCE !== '1' && loads()) {
  console.log('cuda-caching-allocator: using the existing native build');
} else {
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  execFileSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
}
