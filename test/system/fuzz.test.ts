// The snapshot reader and every cca command on 2,000 fuzz cases (structural snapshots from
// fast-check, mutants of our dumps and of PyTorch's fixture, hostile files, and special
// files by path: FIFOs, sockets, devices), each under a time and memory limit: no crash,
// no hang. `npm run fuzz` runs 100,000+ (see RESULTS.md).
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the test tree, without types
import { runFuzz } from '../fuzz/runner.mjs';

interface FuzzStats {
  cases: number;
  valid: number;
  cleanErrors: number;
  crashes: number;
  hangs: number;
  byLabel: Record<string, { valid: number; cleanErrors: number }>;
  failures: unknown[];
}

describe('fuzzing the reader and the commands', () => {
  it('2,000 cases: every one either reads and runs every command, or is refused with a code', async () => {
    const stats = (await runFuzz({ cases: 2000, seed: 20261125, workers: 2, timeoutMs: 20_000 })) as FuzzStats;
    expect(stats.failures).toEqual([]);
    expect(stats.crashes).toBe(0);
    expect(stats.hangs).toBe(0);
    expect(stats.cases).toBe(2000);
    // The mix reaches both sides: files that read and run everything, and refusals.
    expect(stats.valid).toBeGreaterThan(300);
    expect(stats.cleanErrors).toBeGreaterThan(300);
    const labels = Object.keys(stats.byLabel).join(' ');
    for (const kind of ['structure-pickle', 'structure-json', 'pytorch-fixture.pickle-', 'ours.pickle-', 'ours.json-', 'hostile-']) {
      expect(labels).toContain(kind);
    }
    // Special files (a FIFO, a socket, devices, a directory, links): refused, none blocking.
    const special = Object.entries(stats.byLabel).filter(([label]) => label.startsWith('special-'));
    expect(special.map(([label]) => label)).toEqual(expect.arrayContaining(['special-fifo', 'special-socket', 'special-dev-zero']));
    for (const [label, l] of special) expect([label, l.valid, l.cleanErrors]).toEqual([label, 0, 1]);
  });
});
