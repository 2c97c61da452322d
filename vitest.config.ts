import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One process per file: the allocator is process-wide state.
    pool: 'forks',
    testTimeout: 60_000,
  },
});
