// Builds the wasm engine (native/wasm/: the allocator's policy on the simulated device) with
// Debian's emscripten into dist/wasm/cca-engine.cjs, which replay and what-if use where the
// addon cannot load (lib/replay/wasm-port.ts). Incremental: cmake rebuilds what changed.
//   node scripts/build-wasm.mjs      without emscripten: one line, exit 0 (the wasm tests
//                                    then say so); CCA_REQUIRE_WASM=1 (CI) makes that an error
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { delimiter } from 'node:path';

const dir = 'build-wasm';
const found = (cmd) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

if (!found('emcmake')) {
  const line = 'build-wasm: emscripten is not installed (apt-get install emscripten), so the wasm replay engine ' +
    'is not built; replay runs on the native addon only';
  if (process.env.CCA_REQUIRE_WASM === '1') {
    console.error(`${line}; CCA_REQUIRE_WASM=1 asks for it`);
    process.exit(1);
  }
  console.log(line);
  process.exit(0);
}

// Debian's emscripten runs its JS tools with the machine's Node, which does not search
// Debian's own module folder (acorn lives there).
const nodePath = ['/usr/share/nodejs', process.env.NODE_PATH].filter(Boolean).join(delimiter);
const env = { ...process.env, NODE_PATH: nodePath };
const run = (cmd, args) => execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'], env });
run('emcmake', ['cmake', '-S', '.', '-B', dir, '-DCMAKE_BUILD_TYPE=Release']);
run('cmake', ['--build', dir, '-j', '2']);
mkdirSync('dist/wasm', { recursive: true });
copyFileSync(`${dir}/cca_engine.cjs`, 'dist/wasm/cca-engine.cjs');
