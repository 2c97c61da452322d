// npm run stress, shortened: the same random operations, faults and checks (1M+ operations
// are run by hand and reported in bench/RESULTS.md). Its own process: it replaces the runtime.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../scripts/stress.mjs', import.meta.url));

describe('npm run stress', () => {
  it('30,000 operations with faults injected: no violation, and every kind of event happened', () => {
    const out = execFileSync(process.execPath, [SCRIPT, '--ops', '30000', '--seed', '11'], { encoding: 'utf8' });
    expect(out).toMatch(/violations: 0\n$/);
    const n = (re: RegExp) => Number(out.match(re)?.[1]);
    expect(n(/allocations (\d+)/)).toBeGreaterThan(10_000);
    expect(n(/out-of-memory errors (\d+)/)).toBeGreaterThan(0);
    expect(n(/(\d+) failing device mallocs/)).toBeGreaterThan(10);
    expect(n(/\((\d+) device errors surfaced\)/)).toBeGreaterThan(0);
    expect(n(/snapshots compared (\d+)/)).toBeGreaterThanOrEqual(3);
  });
});
