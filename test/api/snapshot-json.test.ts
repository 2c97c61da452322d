// A JSON dump writes trace entries as bytes straight from the native records
// (writeTraceEntriesJson) instead of building each entry and stringifying it. The text must be
// what JSON.stringify writes for the built entries, byte for byte, for every kind of entry:
// OOMs (device_free, no addr), tags, MemPool ids, stacks shared by many entries, no stacks.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CudaOutOfMemoryError, MemPool, cuda, memory, use_mem_pool } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { decodeTraces, fullSnapshot, writeTraceEntriesJson, type EncodedText } from '../../lib/history/snapshot-build.js';
import { JsonBytes } from '../../lib/snapshot/json-bytes.js';
import { CLIENT_TAG_BASE } from '../../lib/history/stack-store.js';
import { MemorySink } from '../../lib/snapshot/sink.js';
import { MiB, freshSim } from '../support/helpers.js';
import { rng } from '../support/replay.js';
import { tempDir } from '../support/temp-dir.js';

afterEach(() => memory._record_memory_history(null));

function workload(): void {
  const site = (n: number) => cuda.alloc(n);
  const kept = [site(4096), site(4096), cuda.alloc(3 * MiB, { tag: 'weights "v2"\n' })];
  const pool = new MemPool();
  use_mem_pool(pool, () => kept.push(cuda.alloc(8192)));
  try {
    cuda.alloc(1024 * MiB);
  } catch (e) {
    if (!(e instanceof CudaOutOfMemoryError)) throw e;
  }
  for (let i = 0; i < 50; i++) site(512 * (1 + (i % 7))).free();
  for (const b of kept) b.free();
  // Memory native code allocated under a name and with no stack (as a C ABI client's is): its
  // entries carry one frame naming it, on both paths.
  const slots = native.callSlots();
  slots.set([0, 4096, 0, 0, CLIENT_TAG_BASE]);
  native.allocInSlots();
  native.free(0, slots[0]!);
}

describe('JSON trace entries written from the records', () => {
  for (const context of [null, 'state', 'alloc', 'all'] as const) {
    it(`equal JSON.stringify of the built entries, byte for byte (context ${context})`, () => {
      freshSim({ capacityBytes: 256 * MiB });
      memory._record_memory_history({ enabled: 'all', context });
      workload();
      const t = native.snapshot(0, 0, true).traces!;
      const built = decodeTraces(t);
      const actions = new Set(built.map((e) => e.action));
      expect([...actions]).toEqual(expect.arrayContaining(['alloc', 'free_completed', 'segment_alloc', 'oom']));
      expect(built.filter((e) => e.frames?.[0]?.name.startsWith('allocated by native code')).length).toBeGreaterThanOrEqual(2);
      const expected = built.map((e) => JSON.stringify(e)).join(',');
      const n = built.length;
      const encoded: EncodedText = { frames: new Map(), tags: new Map() };
      const sink = new MemorySink();
      const out = new JsonBytes(sink);
      // In chunks, as the writer asks for them, sharing one cache of encoded text.
      writeTraceEntriesJson(t, 0, 7, encoded, out);
      out.ascii(',');
      writeTraceEntriesJson(t, 7, n, encoded, out);
      out.flush();
      expect(sink.bytes().toString('utf8')).toBe(expected);
    });
  }

  it('writes every integer below 2^53 as JSON.stringify does, and other numbers through it', () => {
    const values = [0, 1, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 139_638_469_558_272, 1_764_000_000_000_009,
      2 ** 49 + 9, 2 ** 50 - 1, 5_629_499_534_213_119, 9_007_199_254_740_989, 2 ** 53 - 1, 2 ** 53, 2 ** 60, -1, -0, 0.5,
      1e21, Number.NaN, Number.POSITIVE_INFINITY];
    const rand = rng(53);  // seeded: the same numbers every run
    const below53 = () => Math.floor(rand() * 2 ** 21) * 2 ** 32 + Math.floor(rand() * 2 ** 32);  // every bit drawn
    for (let k = 0; k < 2000; k++) values.push(below53(), Math.floor(rand() * 2 ** 40) * 10 + 9);
    const sink = new MemorySink();
    const out = new JsonBytes(sink);
    values.forEach((v, i) => {
      if (i) out.ascii(',');
      out.number(v);
    });
    out.flush();
    expect(sink.bytes().toString('latin1')).toBe(values.map((v) => JSON.stringify(v)).join(','));
  });

  it('a JSON dump parses to the snapshot the object form gives', () => {
    freshSim({ capacityBytes: 256 * MiB });
    memory._record_memory_history({ enabled: 'all', context: 'all' });
    workload();
    const path = join(tempDir('cca-json-'), 'dump.json');
    memory._dump_snapshot(path);
    const dumped = JSON.parse(readFileSync(path, 'utf8')) as { device_traces: unknown[][] };
    const now = JSON.parse(JSON.stringify(fullSnapshot())) as { device_traces: unknown[][] };
    // The second snapshot's history holds the dump's own 'snapshot' entry and its own.
    expect(now.device_traces[0]!.slice(0, dumped.device_traces[0]!.length)).toEqual(dumped.device_traces[0]);
  });
});
