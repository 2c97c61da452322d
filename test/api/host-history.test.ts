// Pinned host memory's history, as PyTorch 2.14 writes it (record_pinned_host_memory; the
// layout read from PR #182407's source at revision 85be33f2): the snapshot's host_segments
// and host_traces, key for key, through our readers, Python's pickle and the CLI.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { analysis, cuda, loadSnapshot, memory } from '../../lib/index.js';
import { freshSim } from '../support/helpers.js';
import { tempDir } from '../support/temp-dir.js';

beforeEach(() => freshSim());

const HOST_SEGMENT_KEYS = ['device', 'address', 'total_size', 'allocated_size', 'active_size', 'requested_size', 'stream',
  'segment_type', 'segment_pool_id', 'is_expandable', 'frames', 'blocks'];
const HOST_TRACE_KEYS = ['action', 'addr', 'size', 'stream', 'compile_context', 'user_metadata', 'time_us', 'pool_id'];

describe('record_pinned_host_memory', () => {
  it('writes both host keys always, after PyTorch\'s other four, empty while host history is off', () => {
    cuda.allocHost(100).free();
    const s = memory._snapshot();
    expect(Object.keys(s)).toEqual(['segments', 'device_traces', 'allocator_settings', 'external_annotations', 'host_segments', 'host_traces']);
    expect([s.host_segments, s.host_traces]).toEqual([[], []]);
  });

  it('records PyTorch\'s five actions with its fields, and one segment of one block per pinned block', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all', record_pinned_host_memory: true });
    const kept = cuda.allocHost(3000);
    const freed = cuda.allocHost(100);
    freed.free();
    const again = cuda.allocHost(120);  // the cached 128-byte block
    again.free();
    memory.empty_host_cache();
    const s = memory._snapshot();
    expect(s.host_traces!.map((e) => `${e.action} ${e.size}`)).toEqual([
      'segment_alloc 4096', 'alloc 4096', 'segment_alloc 128', 'alloc 128', 'free_requested 128', 'free_completed 128',
      'alloc 128', 'free_requested 128', 'free_completed 128', 'segment_free 128',
    ]);
    const alloc = s.host_traces![1]!;
    expect(Object.keys(alloc)).toEqual([...HOST_TRACE_KEYS, 'frames']);
    expect(alloc).toMatchObject({ stream: 0, compile_context: '', user_metadata: '', pool_id: [0, 0] });
    expect(alloc.frames![0]!.filename).toMatch(/host-history\.test\.ts$/);
    expect(Object.keys(s.host_traces![0]!)).toEqual(HOST_TRACE_KEYS);  // segment_alloc: no stack, no frames key
    expect(s.host_traces![4]!.frames![0]!.filename).toMatch(/host-history\.test\.ts$/);  // context 'all': the free's stack
    expect(s.host_traces!.some((e) => 'seq' in e || 'device' in e)).toBe(false);
    const times = s.host_traces!.map((e) => e.time_us);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Math.abs(times[0]! / 1000 - Date.now())).toBeLessThan(60_000);  // Unix microseconds
    expect(s.host_segments).toHaveLength(1);
    const seg = s.host_segments![0]!;
    expect(Object.keys(seg)).toEqual(HOST_SEGMENT_KEYS);
    expect(seg).toMatchObject({
      device: -1, total_size: 4096, allocated_size: 4096, active_size: 4096, requested_size: 0, stream: 0,
      segment_type: 'small', segment_pool_id: [0, 0], is_expandable: false, frames: [],
    });
    expect(seg.blocks).toHaveLength(1);
    expect(Object.keys(seg.blocks[0]!)).toEqual(['address', 'size', 'requested_size', 'state', 'frames']);
    expect(seg.blocks[0]).toMatchObject({ address: seg.address, size: 4096, requested_size: 4096, state: 'active_allocated' });
    expect(seg.blocks[0]!.frames[0]!.filename).toMatch(/host-history\.test\.ts$/);
    // The 128-byte block went back to the system: pinned now 4 KiB, at most 4 KiB + 128 B.
    expect(analysis.summarize(s).at(-1)).toMatchObject({ device: -1, reserved: 4096, peakReserved: 4096 + 128 });
    kept.free();
    // Freed and cached: inactive, no frames (PyTorch forgets the context at free).
    const after = memory._snapshot().host_segments![0]!;
    expect([after.allocated_size, after.active_size, after.blocks[0]!.state, after.blocks[0]!.frames]).toEqual([0, 0, 'inactive', []]);
  });

  it('a block waits as active_pending_free while a copy that used it runs', () => {
    memory._record_memory_history({ record_pinned_host_memory: true, record_cuda: false });
    const s = cuda.Stream.create();
    const d = cuda.alloc(1024, { stream: s });
    const h = cuda.allocHost(1024);
    cuda.sim.holdStream(s);
    d.copyFromAsync(h.array, { stream: s });
    h.free();
    let snap = memory._snapshot();
    expect(snap.host_segments![0]!.blocks[0]!.state).toBe('active_pending_free');
    expect(snap.host_segments![0]!.active_size).toBe(1024);
    expect(snap.host_traces!.map((e) => e.action)).toEqual(['segment_alloc', 'alloc', 'free_requested']);
    cuda.sim.completeStream(s);
    cuda.sim.holdStream(s, false);
    cuda.allocHost(8).free();  // the next allocation processes the copy's event
    snap = memory._snapshot();
    expect(snap.host_traces!.map((e) => e.action).slice(3, 4)).toEqual(['free_completed']);
    expect(snap.device_traces[0] ?? []).toEqual([]);  // record_cuda: false left device history off
    d.free();
  });

  it('context \'state\' keeps alloc stacks only; stopping needs record_pinned_host_memory, as in PyTorch', () => {
    memory._record_memory_history({ enabled: 'all', context: 'state', record_pinned_host_memory: true });
    cuda.allocHost(64).free();
    let t = memory._snapshot().host_traces!;
    expect(t.map((e) => e.frames !== undefined)).toEqual([false, true, false, false]);
    memory._record_memory_history(null);  // device history only
    cuda.allocHost(64).free();
    t = memory._snapshot().host_traces!;
    expect(t).toHaveLength(7);
    memory._record_memory_history(null, { record_pinned_host_memory: true });
    expect(memory._snapshot().host_traces).toEqual([]);
    expect(memory._snapshot().host_segments).toEqual([]);
    // The legacy signature takes the option too; max_entries bounds the host ring as well.
    memory._record_memory_history(true, { trace_alloc_max_entries: 3, record_pinned_host_memory: true });
    cuda.allocHost(64).free();
    cuda.allocHost(64).free();
    expect(memory._snapshot().host_traces!.map((e) => e.action)).toEqual(['alloc', 'free_requested', 'free_completed']);
  });

  it('a bad option changes neither history', () => {
    memory._record_memory_history({ enabled: 'all', maxEntries: 50, record_pinned_host_memory: true });
    cuda.allocHost(64).free();
    for (const bad of [{ record_cuda: false, maxEntries: 1 }, { record_pinned_host_memory: 'yes', maxEntries: 1 },
      { enabled: null, recordPinnedHostMemory: true, record_pinned_host_memory: true }]) {
      expect(() => memory._record_memory_history(bad as never)).toThrow(expect.objectContaining({ code: expect.stringMatching(/^ERR_/) }));
    }
    cuda.allocHost(64).free();
    // 4 entries for the first block, 3 for its reuse: the refused calls stopped nothing.
    expect(memory._snapshot().host_traces).toHaveLength(7);
  });

  it('the conformance script the GPU run uses passes on the simulator and dumps a readable file', () => {
    const file = join(tempDir('cca-host-conf-'), 'host.pickle');
    const script = join(__dirname, '../conformance/js-host-history.mjs');
    const out = execFileSync(process.execPath, [script, file], { encoding: 'utf8', env: { ...process.env, CCA_DEVICE: 'sim' } });
    expect(out).toMatch(/2 passed, 0 failed\n$/);
    expect(loadSnapshot(file).host_traces!.length).toBeGreaterThanOrEqual(21);
  });

  it('round-trips through Python\'s pickle and our readers; the CLI summarizes, lists and finds host leaks', () => {
    const dir = tempDir('cca-host-');
    memory._record_memory_history({ enabled: 'all', context: 'all', record_pinned_host_memory: true });
    const leaked: unknown[] = [];
    memory.annotate('step', () => cuda.allocHost(4096).free());
    for (let i = 0; i < 3; i++) memory.annotate('step', () => leaked.push(cuda.allocHost(2000)));
    const file = join(dir, 'host.pickle');
    memory._dump_snapshot(file);
    const json = join(dir, 'host.json');
    memory._dump_snapshot(json);  // the JSON writer's path (device traces written lazily) keeps both keys too
    expect(loadSnapshot(json).host_traces).toEqual(loadSnapshot(file).host_traces);
    const py = execFileSync('python3', ['-c', `
import pickle, sys
s = pickle.load(open(sys.argv[1], 'rb'))
seg = s['host_segments'][0]
print(list(s.keys())[-2:], len(s['host_segments']), len(s['host_traces']))
print(seg['device'], type(seg['segment_pool_id']).__name__, seg['segment_type'], sorted(x['blocks'][0]['state'] for x in s['host_segments']))
print(type(s['host_traces'][0]['pool_id']).__name__, sorted({e['action'] for e in s['host_traces']}))`, file], { encoding: 'utf8' });
    expect(py.trim().split('\n')).toEqual([
      "['host_segments', 'host_traces'] 4 10",
      "-1 tuple small ['active_allocated', 'active_allocated', 'active_allocated', 'inactive']",
      "tuple ['alloc', 'free_completed', 'free_requested', 'segment_alloc']",
    ]);
    const back = loadSnapshot(file);
    expect(back.host_traces).toHaveLength(10);
    expect(back.host_segments!.map((x) => x.device)).toEqual([-1, -1, -1, -1]);
    const summaries = analysis.summarize(back);
    expect(summaries.map((x) => x.device)).toEqual([-1]);  // no device memory was used: host's row only
    const host = summaries[0];
    expect(host).toMatchObject({ device: -1, segments: 4, reserved: 3 * 2048 + 4096, allocated: 3 * 2048, cached: 4096 });
    expect(host!.peakReserved).toBe(3 * 2048 + 4096);
    const leaks = analysis.findLeaks(back, { host: true, minSteps: 1 });
    expect(leaks).toMatchObject({ host: true, marker: 'step', steps: 4, survivors: { count: 2, bytes: 4096 } });
    expect(leaks.groups[0]!.growing).toBe(true);
    const cli = join(__dirname, '../../dist/cli/main.js');
    const cca = (...args: string[]) => execFileSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
    expect(cca('summary', file)).toMatch(/pinned host memory: 4 blocks\n {2}pinned +10\.00 KiB/);
    expect(cca('trace', '--host', file)).toMatch(/^pinned host memory: 10 entries\n +0 +0\.000 ms {2}segment_alloc/);
    expect(cca('leaks', '--host', '--min-steps', '1', file)).toMatch(/^pinned host memory: 4 steps marked by 'step'/);
    expect(cca('summary', '--json', file)).toContain('"device": -1');
    for (const h of leaked) (h as { free(): void }).free();
  });
});
