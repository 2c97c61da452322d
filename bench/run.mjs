// Runs every benchmark: the C++ core pair (built by `npm run test:native`) and the JS pair.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const run = (cmd, args) => execFileSync(cmd, args, { stdio: 'inherit' });
if (!existsSync('build-tests/cca_core_bench')) {
  run('cmake', ['-S', '.', '-B', 'build-tests', '-DCCA_BUILD_TESTS=ON', '-DCMAKE_BUILD_TYPE=Release']);
}
run('cmake', ['--build', 'build-tests', '-j', '2', '--target', 'cca_core_bench']);
run('./build-tests/cca_core_bench', []);
console.log('');
run(process.execPath, ['bench/js-alloc-free.mjs']);
