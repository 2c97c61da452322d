// What the addon writes and what TypeScript reads, compared: the snapshot records
// (native/binding/snapshot_records.h, the generated lib/snapshot/records.generated.ts, and
// the names the built addon reports) and the out-of-memory numbers
// (native/common/errors.h against OutOfMemoryDetails in lib/errors.ts). Renaming,
// adding, dropping or moving a field on one side fails this file.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { CudaOutOfMemoryError, cuda, memory } from '../../lib/index.js';
import type { OutOfMemoryDetails } from '../../lib/errors.js';
import { native } from '../../lib/native.js';
import { checkLayout, decodedFields } from '../../lib/snapshot/layout.js';
import { KiB, MiB, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

describe('snapshot records', () => {
  it('the generated TypeScript offsets are the header\'s', () => {
    const script = fileURLToPath(new URL('../../scripts/gen-snapshot-records.mjs', import.meta.url));
    // Exits 1, saying what to run, when records.generated.ts differs from the header.
    expect(() => execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' })).not.toThrow();
  });

  it('the built addon writes the fields the decoder reads, in the same order', () => {
    const addon = native.snapshotLayout();
    for (const kind of ['segment', 'block', 'trace'] as const) {
      expect(addon[kind]).toEqual([...decodedFields[kind]]);
      expect(new Set(addon[kind]).size).toBe(addon[kind].length);
    }
  });

  it('each field lands where the decoder looks: a known state, field by field', () => {
    memory._record_memory_history({ enabled: 'all', maxEntries: 100 });
    const a = cuda.alloc(3000);
    const b = cuda.alloc(5 * MiB);
    b.free();
    const snap = memory._snapshot();
    const small = snap.segments.find((s) => s.segment_type === 'small')!;
    expect(small.total_size).toBe(2 * MiB);
    expect(small.allocated_size).toBe(3072);
    expect(small.active_size).toBe(3072);
    expect(small.requested_size).toBe(3000);
    expect(small.is_expandable).toBe(false);
    expect(small.blocks[0]).toMatchObject({ address: a.ptr, size: 3072, requested_size: 3000, state: 'active_allocated' });
    expect(small.blocks[1]).toMatchObject({ size: 2 * MiB - 3072, state: 'inactive' });
    const large = snap.segments.find((s) => s.segment_type === 'large')!;
    expect(large.total_size).toBe(20 * MiB);
    expect(large.allocated_size).toBe(0);
    const traces = snap.device_traces[0]!;
    const alloc = traces.find((e) => e.action === 'alloc' && e.addr === b.ptr)!;
    expect(alloc).toMatchObject({ size: 5 * MiB, stream: 0 });
    const seqs = traces.map((e) => e.seq!);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(traces.map((e) => e.action))).toEqual(new Set(['segment_alloc', 'alloc', 'free_requested', 'free_completed']));
    a.free();
    memory._record_memory_history(null);
  });

  it('an addon whose records differ is refused with a clear error', () => {
    const fields = native.snapshotLayout().segment;
    const variants = [fields.slice(0, -1), [...fields.slice(0, -1), 'renamed'], [fields[1]!, fields[0]!, ...fields.slice(2)]];
    for (const names of variants) {
      let caught: unknown;
      try {
        checkLayout('segment', names);
      } catch (e) {
        caught = e;
      }
      expect((caught as { code: string }).code).toBe('ERR_CCA_ADDON_MISMATCH');
      expect((caught as Error).message).toMatch(/addon is from another version.*npm rebuild/);
    }
    expect(() => checkLayout('segment', fields)).not.toThrow();
  });
});

describe('out-of-memory numbers', () => {
  // Every key of OutOfMemoryDetails, once: TypeScript rejects this object if a key is
  // missing or unknown, so the list cannot drift from the interface.
  const detailKeys = {
    device: true, requested: true, allocSize: true, deviceFree: true, deviceTotal: true, allowed: true,
    allocated: true, reserved: true, cachedFree: true, freeBlocks: true, largestFreeBlock: true,
  } satisfies Record<keyof OutOfMemoryDetails, true>;

  it('the addon sends exactly the fields OutOfMemoryDetails declares, each a number', () => {
    freshSim({ capacityBytes: 64 * MiB });
    const keep = cuda.alloc(8 * KiB);
    const events: object[] = [];
    const stop = memory.onOutOfMemory((e) => events.push(e));
    let caught: unknown;
    try {
      cuda.alloc(128 * MiB);
    } catch (e) {
      caught = e;
    }
    stop();
    // The OOM hooks get the same numbers, and the error.
    expect(Object.keys(events[0]!).sort()).toEqual([...Object.keys(detailKeys), 'error'].sort());
    expect(caught).toBeInstanceOf(CudaOutOfMemoryError);
    const err = caught as CudaOutOfMemoryError & Record<string, unknown>;
    const numbers = Object.keys(err).filter((k) => k !== 'code' && k !== 'name');
    expect(numbers.sort()).toEqual(Object.keys(detailKeys).sort());
    for (const k of numbers) expect(typeof err[k]).toBe('number');
    expect(err.allocSize).toBe(128 * MiB);
    expect(err.deviceTotal).toBe(64 * MiB);
    expect(err.allocated).toBe(8 * KiB);
    keep.free();
  });
});
