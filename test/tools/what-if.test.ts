// `replay.whatIf` / `cca replay --what-if`: one recorded history replayed under the
// recorded settings and the usual remedies in worker threads, each on devices of its own;
// each row must equal the same replay run here, and the caller's memory is untouched.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CudaOutOfMemoryError, analysis, replay, cuda, memory, type DeviceBuffer, type Snapshot } from '../../lib/index.js';
import { writeSnapshotFile } from '../../lib/snapshot/dump.js';
import { MiB } from '../support/helpers.js';
import { tempDir } from '../support/temp-dir.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** A history on a 512 MiB device: mixed sizes, frees, an OOM, then more work. */
function recorded(): Snapshot {
  cuda.sim.configure({ capacityBytes: 512 * MiB });
  memory._record_memory_history({ enabled: 'all', context: null });
  const keep: DeviceBuffer[] = [];
  for (let i = 0; i < 60; i++) {
    const b = cuda.alloc(((i * 7) % 23 + 1) * MiB + (i % 5) * 4096);
    if (i % 3 === 0) keep.push(b);
    else b.free();
  }
  try {
    cuda.alloc(450 * MiB);
  } catch (e) {
    if (!(e instanceof CudaOutOfMemoryError)) throw e;
  }
  for (let i = 0; i < 20; i++) cuda.alloc((i % 9 + 1) * 3 * MiB).free();
  const snap = memory._snapshot();
  memory._record_memory_history(null);
  for (const b of keep) b.free();
  return snap;
}

describe('what-if', () => {
  it('replays under every setting in parallel, each row as a replay here gives it', async () => {
    const snap = recorded();
    const held = cuda.alloc(5 * MiB);
    const before = memory.memory_stats();
    const report = await replay.whatIf(snap, { settings: ['max_split_size_mb:32'], workers: 2 });
    expect(memory.memory_stats()).toEqual(before);
    held.free();
    expect(report.capacityBytes).toBe(512 * MiB);  // from the recorded OOM entry
    expect(report.workers).toBe(2);
    expect(report.rows.map((r) => r.settings)).toEqual(['', ...replay.WHAT_IF_SETTINGS, 'max_split_size_mb:32']);
    expect(report.rows.filter((r) => r.recorded).map((r) => r.settings)).toEqual(['']);
    for (const row of [report.rows[0]!, report.rows[1]!, report.rows.at(-1)!]) {
      const here = replay.replayOnSim(snap, { settings: row.settings });
      expect(row.peakReserved).toBe(here.ours.peakReserved);
      expect(row.endReserved).toBe(here.ours.endReserved);
      expect(row.deviceMallocs).toBe(here.ours.segmentGrowths);
      expect(row.largestFreeAtPeak).toBe(here.oursAtPeak.largestFreeBlock);
      expect(row.ooms).toEqual({ recorded: 1, here: here.ooms.reproduced });
      expect(row.ms).toBeGreaterThan(0);
    }
    expect(report.rows[0]!.ooms).toEqual({ recorded: 1, here: 1 });
    expect(report.rows[0]!.peakReserved).toBe(Math.max(...analysis.timeline(snap).reserved));
  });

  it('refuses bad settings and options before starting any process', async () => {
    const snap = recorded();
    await expect(replay.whatIf(snap, { settings: ['bogus:1'] })).rejects.toMatchObject({ code: 'ERR_CCA_INVALID_CONFIG' });
    await expect(replay.whatIf(snap, { settings: 'expandable_segments:True' as never })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await expect(replay.whatIf(snap, { workrs: 2 } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await expect(replay.whatIf({} as never)).rejects.toMatchObject({ code: 'ERR_CCA_CORRUPT_SNAPSHOT' });
  });

  it('cca replay --what-if prints the table, and --json the report', () => {
    const file = join(tempDir('cca-what-if-'), 'run.pickle');
    writeSnapshotFile(recorded(), file);
    const text = execFileSync(process.execPath, [CLI, 'replay', file, '--what-if'], { encoding: 'utf8' });
    expect(text).toMatch(/simulated 512\.00 MiB device \(native engine, \d+ threads/);
    expect(text).toMatch(/^\(defaults\) \(recorded\)\s+[\d.]+ MiB\s+[\d.]+ MiB\s+\d+\s+[\d.]+ (B|KiB|MiB)\s+[\d.]+%\s+1 of 1\s+[\d.]+ s$/m);
    expect(text).toMatch(/^expandable_segments:True /m);
    const json = JSON.parse(execFileSync(process.execPath, [CLI, 'replay', file, '--what-if', '--json', '--settings', 'max_split_size_mb:24'], { encoding: 'utf8' }));
    expect(json.rows.at(-1).settings).toBe('max_split_size_mb:24');
  });
});
