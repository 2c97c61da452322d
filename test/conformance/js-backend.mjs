// The JS API against whichever backend this process got (CCA_DEVICE / CCA_LIBCUDA_PATH):
// run by vitest on the fake driver, and as is on a real GPU by bench/gpu/run-on-gpu.sh
// (no test runner there: plain node:assert). Ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { runCases } from './run-cases.mjs';
import { cuda, memory, loadSnapshot } from '../../dist/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MiB = 2 ** 20;
const cases = [];
const test = (name, fn) => cases.push([name, fn]);

test('backend and device', () => {
  const info = cuda.runtimeInfo();
  assert.equal(info.backend, process.env.CCA_EXPECT_BACKEND ?? 'cuda', info.note);
  const p = cuda.getDeviceProperties(0);
  assert.ok(p.totalMemory > 0 && p.name.length > 0);
  assert.equal(p.simulated, info.backend === 'sim');
});

test('copies round-trip and fill', () => {
  const b = cuda.alloc(4 * MiB);
  const src = new Float32Array(MiB).map((_, i) => i * 0.25);
  b.copyFrom(src);
  assert.deepEqual(b.copyTo(new Float32Array(MiB)), src);
  const part = b.fill(7, 16, 4).copyTo(new Uint8Array(24));
  assert.deepEqual([...part.subarray(16, 20)], [7, 7, 7, 7]);
  b.free();
});

test('cached reuse needs no device call', () => {
  const before = memory.memory_stats().num_device_alloc;
  const a = cuda.alloc(1000);
  const ptr = a.ptr;
  a.free();
  const b = cuda.alloc(900);
  assert.equal(b.ptr, ptr);
  assert.ok(memory.memory_stats().num_device_alloc <= before + 1);
  b.free();
});

// That reuse really waits while the side stream is busy is checked where work can be left
// pending: the C++ GPU conformance test (a memset with no sync) and the sim/fake tests
// (held streams). From JS every copy waits for its stream, so here: after the side stream
// syncs, the recorded block is reused.
test('record_stream: once the side stream syncs, the block is reused', () => {
  const side = cuda.Stream.create();
  const big = 256 * MiB + 2 * MiB;
  const q = cuda.alloc(big);
  const ptr = q.ptr;
  cuda.recordStream(q, side);
  q.free();
  side.synchronize();
  assert.equal(memory.memory_stats()['active_bytes.all.current'], 0);
  const again = cuda.alloc(big);
  assert.equal(again.ptr, ptr);
  again.free();
  assert.equal(memory.check_invariants(), null);
  side.destroy();
});

test('a driver OOM goes through release-and-retry, then the error with the device numbers', () => {
  const [, total] = memory.mem_get_info();
  const retries = memory.memory_stats().num_alloc_retries;
  let err;
  try {
    cuda.alloc(total * 2);
  } catch (e) {
    err = e;
  }
  assert.equal(err?.name, 'CudaOutOfMemoryError');
  assert.equal(err.deviceTotal, total);
  assert.match(err.message, /^CUDA out of memory\. Tried to allocate /);
  assert.equal(memory.memory_stats().num_alloc_retries, retries + 1);
});

test('history, snapshots and a dump that loads back', async () => {
  memory._record_memory_history({ enabled: 'all', context: 'alloc', maxEntries: 1000 });
  const b = cuda.alloc(3 * MiB, { tag: 'x' });
  const snap = memory._snapshot();
  assert.ok(snap.device_traces[0].some((e) => e.action === 'alloc' && e.addr === b.ptr && e.user_metadata === 'x'));
  const dir = mkdtempSync(join(tmpdir(), 'cca-conf-'));
  const file = join(dir, 's.pickle');
  await memory._dump_snapshot(file);
  assert.equal(loadSnapshot(file).segments.length, snap.segments.length);
  rmSync(dir, { recursive: true, force: true });
  b.free();
  memory._record_memory_history(null);
});

test('expandable segments map, copy across pages, and unmap', () => {
  memory.empty_cache();
  memory._set_allocator_settings('expandable_segments:True');
  const a = cuda.alloc(15 * MiB);
  const b = cuda.alloc(15 * MiB);
  assert.equal(b.ptr, a.ptr + 15 * MiB);
  const data = new Uint8Array(2 * MiB).fill(3);
  assert.deepEqual(b.copyFrom(data, 4 * MiB).copyTo(new Uint8Array(2 * MiB), 4 * MiB), data);
  const segs = memory.memory_snapshot();
  assert.ok(segs.some((s) => s.is_expandable && s.total_size === 40 * MiB));
  a.free();
  b.free();
  memory.empty_cache();
  assert.equal(memory.memory_reserved(), 0);
  memory._set_allocator_settings('');
});

test('caching off: every free goes back to the driver; notes and tracebacks on live memory', () => {
  memory.empty_cache();
  const [freeBefore] = memory.mem_get_info();
  memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 1000 });
  memory.caching_allocator_disabled(() => {
    const b = cuda.alloc(64 * MiB);
    b.copyFrom(new Uint8Array(16).fill(9));
    assert.equal(memory.memory_reserved(), 64 * MiB);
    memory._annotate_memory(b, 'checked on the driver');
    assert.ok(memory._allocation_traceback(b).length > 0);
    b.free();
    assert.equal(memory.memory_reserved(), 0);
  });
  const [freeAfter] = memory.mem_get_info();
  // The driver got the memory back (other processes may move the figure by a little).
  assert.ok(Math.abs(freeAfter - freeBefore) < 32 * MiB, `free before ${freeBefore}, after ${freeAfter}`);
  const t = memory._snapshot().device_traces[0];
  assert.ok(t.some((e) => e.action === 'annotate' && e.user_metadata === 'checked on the driver'));
  assert.ok(t.some((e) => e.action === 'segment_free' && e.size === 64 * MiB));
  memory._record_memory_history(null);
  cuda.alloc(MiB).free();
  assert.ok(memory.memory_reserved() > 0);  // caching back on
  memory.empty_cache();
});

await runCases(cases, memory);
