import { defineConfig } from 'vitest/config';

// The suite in four projects, by what the tests are:
//   api       the library's API, in process, on the simulated GPU
//   contract  table-driven bad input, the binding's and the types' surface, the device
//             contract against the fake driver
//   tools     cca, the analyses, replay, the viewer, the README's examples
//   system    packing and installing, CommonJS, a real Prometheus, fuzzing, stress
// `npm test` runs api and contract (about a minute with the C++ tests); `npm run test:all`
// runs all four.
//
// Time limits are hang guards, not speed checks (benchmarks check speed): each is many
// times what its project's slowest test takes on a quiet 2-core machine, so a machine
// loaded on every core still passes, and only a test that never ends fails on time.
const project = (name: string, limitMs: number) => ({
  extends: true as const,
  test: { name, include: [`test/${name}/**/*.test.ts`], testTimeout: limitMs, hookTimeout: limitMs },
});

export default defineConfig({
  test: {
    // One process per file: the allocator is process-wide state.
    pool: 'forks',
    projects: [project('api', 120_000), project('contract', 120_000), project('tools', 300_000), project('system', 600_000)],
  },
});
