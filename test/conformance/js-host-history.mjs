// Pinned host memory's history on whichever backend this process got (the simulator in CI,
// a real GPU in bench/gpu/run-on-gpu.sh): pinned buffers copied to and from the device on a
// stream, recorded with record_pinned_host_memory, checked against PyTorch 2.14's layout and
// dumped to argv[2] (a pickle) for PyTorch's _memory_viz.py to read there. Plain node:assert;
// ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { cuda, memory } from '../../dist/index.js';
import { runCases } from './run-cases.mjs';

const file = process.argv[2];
const kept = [];

await runCases([
  ['pinned copies recorded as PyTorch 2.14 records them', async () => {
    memory._record_memory_history({ enabled: 'all', context: 'all', max_entries: 10000, record_pinned_host_memory: true });
    const s = cuda.Stream.create();
    for (let i = 0; i < 4; i++) {
      const host = cuda.allocHost(1000 * (i + 1) * 4);
      new Float32Array(host.array.buffer).fill(i);
      const dev = cuda.alloc(host.size, { stream: s }).copyFromAsync(host, { stream: s });
      kept.push(dev);
      host.free();  // waits for the copy before it is reused
    }
    const big = cuda.allocHost(5 << 20);
    kept.push(big);
    await s.done();
    cuda.allocHost(8).free();  // processes the copies' events
    const snap = memory._snapshot();
    const actions = snap.host_traces.map((e) => e.action);
    assert.equal(actions.filter((a) => a === 'alloc').length, 6);
    assert.equal(actions.filter((a) => a === 'free_requested').length, 5);
    assert.equal(actions.filter((a) => a === 'free_completed').length, 5);
    assert.ok(snap.host_segments.every((g) => g.device === -1 && g.blocks.length === 1 && g.requested_size === 0));
    const live = snap.host_segments.filter((g) => g.blocks[0].state === 'active_allocated');
    assert.deepEqual(live.map((g) => g.total_size), [8 << 20]);  // the 5 MiB buffer, rounded
    assert.ok(live[0].blocks[0].frames.length > 0);
  }],
  ['the dump has both keys, read back by our loader', async () => {
    if (!file) return;
    memory._dump_snapshot(file);
    memory._record_memory_history(null, { record_pinned_host_memory: true });
    const { loadSnapshot } = await import('../../dist/index.js');
    const back = loadSnapshot(file);
    assert.ok(back.host_traces.length >= 21);
    assert.ok(back.host_segments.length >= 5);
    for (const k of kept) k.free();
  }],
], memory);
