// The `npm install` step. In order:
// 1. unless a source build is asked for (`npm install --build-from-source`, `npm rebuild`,
//    or CCA_BUILD_FROM_SOURCE=1), use the binary node-gyp-build finds, if it loads here:
//    build/Release first (a local build), then prebuilds/<platform>-<arch>/ (the package's
//    prebuild, tagged glibc/musl);
// 2. otherwise build from source with cmake-js, if cmake and a C++ compiler are there;
// 3. otherwise succeed with one line: the live allocator is not available on this machine,
//    the snapshot tools (which need no addon) are, and how to get a build. The install
//    never fails for want of a binary: a PyTorch user on a laptop runs `npx cca` on files.
//    Only a source build that was asked for (`--build-from-source`, `npm rebuild`) fails,
//    loudly, with this machine, what was looked for and the two fixes.
// (node-gyp-build's own install command would fall back to `node-gyp rebuild`; this addon
// has no binding.gyp: it builds with CMake.)
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PREBUILT, libcOf, platformLine } from './platform.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const env = process.env;
const forced = env.npm_config_build_from_source === 'true' || env.CCA_BUILD_FROM_SOURCE === '1' || env.npm_command === 'rebuild';

function tryLoad() {
  try {
    const file = require('node-gyp-build').resolve(root);
    require(file);
    return { file };
  } catch (e) {
    return { error: e.message.split('\n')[0] };
  }
}

function has(cmd, args = ['--version']) {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const prebuildDir = join(root, 'prebuilds', `${process.platform}-${process.arch}`);
const prebuilds = existsSync(prebuildDir) ? readdirSync(prebuildDir).filter((f) => f.endsWith('.node')) : [];

let loadError = '';
if (!forced) {
  const r = tryLoad();
  if (r.file) {
    console.log(`cuda-caching-allocator: using ${r.file.slice(root.length)} (no build needed)`);
    process.exit(0);
  }
  loadError = r.error;
}

const cmake = has('cmake');
const compiler = [env.CXX, 'c++', 'g++', 'clang++'].filter(Boolean).some((c) => has(c));
// The one line of a successful install without the addon.
function withoutAddon(why) {
  console.log(`cuda-caching-allocator: installed without the native addon (${why}): the snapshot tools work ` +
    '(npx cca summary|segments|trace|frag|diff|leaks|viz|convert on snapshot files); the live allocator (cuda, memory, ' +
    `compute) does not. For it: install cmake and a C++17 compiler and run \`npm rebuild cuda-caching-allocator\`, or use ${PREBUILT.join(' or ')} with glibc >= 2.34.`);
  process.exit(0);
}

if ((!cmake || !compiler) && !forced) {
  withoutAddon(`no prebuild loads on ${platformLine()}${prebuilds.length && loadError ? ` (${loadError})` : ''}, and ` +
    `${[!cmake && 'cmake', !compiler && 'a C++ compiler'].filter(Boolean).join(' and ')} ${!cmake && !compiler ? 'are' : 'is'} not on PATH to build one`);
}
if (!cmake || !compiler) {
  const missing = [!cmake && 'cmake (>= 3.15)', !compiler && 'a C++17 compiler (g++ or clang++)'].filter(Boolean).join(' and ');
  const looked = `prebuilds/${process.platform}-${process.arch}/*.${libcOf()}.node`;
  const found = prebuilds.length === 0 ? 'none for this platform'
    : `${prebuilds.join(', ')}, which did not load here${loadError ? `: ${loadError}` : ''}`;
  console.error([
    '',
    'cuda-caching-allocator: a build from source was asked for, but it cannot be built here.',
    `  this machine: ${platformLine()}`,
    `  looked for:   ${looked} (found: ${found})`,
    `  to build it needs ${missing}, which ${!cmake && !compiler ? 'are' : 'is'} not on PATH.`,
    'Fix it with one of:',
    '  1. install the build tools (Debian/Ubuntu: apt-get install cmake g++; Fedora: dnf install cmake gcc-c++;',
    '     macOS: xcode-select --install && brew install cmake), then run: npm rebuild cuda-caching-allocator',
    `  2. use a platform with a prebuild: ${PREBUILT.join(', ')}, with glibc >= 2.34 (no GPU or CUDA toolkit needed)`,
    '',
  ].join('\n'));
  process.exit(1);
}

console.log(`cuda-caching-allocator: building the addon from source${forced ? ' (asked for)' : loadError ? ` (the prebuild did not load: ${loadError})` : ''}`);
try {
  execFileSync(process.execPath, [require.resolve('cmake-js/bin/cmake-js'), 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
} catch {
  if (!forced) withoutAddon(`the build from source failed on ${platformLine()}: output above`);
  console.error(`\ncuda-caching-allocator: the build from source failed (output above) on ${platformLine()}.\n` +
    'It needs cmake >= 3.15 and a C++17 compiler; no GPU or CUDA toolkit. Report it with the output above.\n');
  process.exit(1);
}
