// Builds and runs the C++ core tests with ctest.
//   node scripts/native-tests.mjs              release build in build-tests/
//   node scripts/native-tests.mjs --sanitize   AddressSanitizer + UBSan build in build-asan/,
//                                               CCA_DEBUG=3 (the validator after every
//                                               operation), a shorter random sequence
//   node scripts/native-tests.mjs --tsan       ThreadSanitizer build in build-tsan/, running
//                                               the tests whose name says "concurrent"
//   node scripts/native-tests.mjs --arm64      cross-compiled for linux-arm64 in build-arm64-tests/
//                                               (cmake/aarch64-linux-gnu.cmake), run under
//                                               qemu-aarch64 with Debian's arm64 libraries
import { execFileSync } from 'node:child_process';

if (process.argv.includes('--arm64')) {
  const dir = 'build-arm64-tests';
  execFileSync('cmake', ['-S', '.', '-B', dir, '-DCCA_BUILD_TESTS=ON', '-DCMAKE_BUILD_TYPE=Release',
    '-DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake'], { stdio: 'inherit' });
  execFileSync('cmake', ['--build', dir, '-j', '2', '--target', 'cca_core_tests'], { stdio: 'inherit' });
  // The same tests as on x64 (the conformance suites against the sim and the fake driver,
  // the randomized sequences with a shorter run: emulation is ~10x slower).
  execFileSync('qemu-aarch64', [`${dir}/cca_core_tests`], {
    stdio: 'inherit', env: { ...process.env, QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu', CCA_RANDOM_OPS: process.env.CCA_RANDOM_OPS ?? '20000' },
  });
  process.exit(0);
}

const sanitize = process.argv.includes('--sanitize');
const tsan = process.argv.includes('--tsan');
const dir = sanitize ? 'build-asan' : tsan ? 'build-tsan' : 'build-tests';
const run = (cmd, args, env = {}) =>
  execFileSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });

run('cmake', ['-S', '.', '-B', dir, '-DCCA_BUILD_TESTS=ON',
  `-DCCA_SANITIZE=${sanitize ? 'ON' : 'OFF'}`, `-DCCA_TSAN=${tsan ? 'ON' : 'OFF'}`, `-DCCA_DEBUG=${sanitize ? 3 : 0}`,
  `-DCMAKE_BUILD_TYPE=${sanitize || tsan ? 'Debug' : 'Release'}`]);
// The plain run builds the tests alone (the benchmarks are not needed to test, and this is
// the command run after every change); the sanitizer builds compile everything, so CI
// still compiles the benchmarks.
run('cmake', ['--build', dir, '-j', '2', ...(sanitize || tsan ? [] : ['--target', 'cca_core_tests'])]);
if (tsan) {
  // halt_on_error: a data race fails the run, it is not only printed.
  run(`${dir}/cca_core_tests`, ['concurrent'], { TSAN_OPTIONS: 'halt_on_error=1:second_deadlock_stack=1' });
  process.exit(0);
}
run('ctest', ['--test-dir', dir, '--output-on-failure', '-j', '2'], {
  CCA_RANDOM_OPS: process.env.CCA_RANDOM_OPS ?? (sanitize ? '20000' : '100000'),
  ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=1',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
});
