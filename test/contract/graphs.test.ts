// CUDA graphs from JS (compute.captureGraph) on the cuda backend over the fake driver (its
// graphs record and replay the CPU kernels, copies and event records). The backend is chosen
// per process, so each case runs in a child process. The allocator's side is tested in C++
// (test/native/capture_test.cpp, graph_test.cpp); here, what a JS user sees: a replay equals
// the eager result, buffers a graph names cannot be freed while it lives, a throwing callback
// leaves nothing behind, the calls a capture forbids are refused with a code, the graph's pool
// shows in snapshots and stats, and the simulator refuses graphs by name.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../lib/index.js';
import { replayOnSim } from '../../lib/replay/replay.js';
import { expectExact, replayOnBoth } from '../support/replay.js';

const FAKE = fileURLToPath(new URL('../../build-tests/libfakecuda.so', import.meta.url));
const ENTRY = new URL('../../dist/index.js', import.meta.url).href;
const GRAPH = new URL('../../dist/compute/graph.js', import.meta.url).href;
const ready = existsSync(FAKE) && existsSync(fileURLToPath(ENTRY));
const env = { CCA_DEVICE: 'cuda', CCA_LIBCUDA_PATH: FAKE, FAKE_CUDA_CAPACITY_MB: '256' };

function run(script: string, extra: Record<string, string> = {}): any {
  const code = `import * as cca from ${JSON.stringify(ENTRY)};\nimport * as graphs from ${JSON.stringify(GRAPH)};\n` +
    `const { cuda, compute, memory, MemPool } = cca;\n` +
    `const m = process.env.CCA_DEVICE === 'sim' ? null : compute.Module.load('FAKECUBIN\\nsaxpy\\nfill_u32\\n');\n` +
    `const saxpy = m?.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'u32']);\n` +
    `const fill = m?.getKernel('fill_u32', ['ptr', 'u32', 'u32']);\n` +
    `const N = 64;\n` +
    // A = A * 2 through a temporary, as an array library runs it (cupy#9655's case).
    `function double(A, stream) {\n` +
    `  const tmp = cuda.alloc(N * 4, { stream });\n` +
    `  fill.launch({ grid: 1, block: N, stream }, tmp, 0, N);\n` +
    `  saxpy.launch({ grid: 1, block: N, stream }, 2, A, tmp, N);\n` +
    `  A.copyFromAsync(tmp, { stream });\n` +
    `  tmp.free();\n` +
    `}\n` +
    `const ramp = (first) => Float32Array.from({ length: N }, (_, i) => first + i);\n` +
    `const read = (b) => Array.from(b.copyTo(new Float32Array(N)));\n` +
    `const out = await (async () => {${script}})();\nconsole.log(JSON.stringify(out));`;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, ...env, ...extra },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe.skipIf(!ready)('compute.captureGraph on the fake driver', () => {
  it('replays N times to the eager result, each launch one call', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const E = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const g = compute.captureGraph(s, () => { double(A, s); double(A, s); });
      const captured = read(A);
      for (let i = 0; i < 4; i++) { g.launch(); double(E, s); double(E, s); }
      const r = { captured: captured[2], graph: read(A), eager: read(E), nodes: g.nodes, pool: g.pool,
        uses: A.graphUses, state: compute.captureState() };
      g.destroy();
      A.free(); E.free();
      r.valid = memory.check_invariants();
      return r;`);
    expect(out.captured).toBe(3);  // capturing ran nothing
    expect(out.graph).toEqual(out.eager);
    expect(out.graph[2]).toBe(3 * 256);
    expect(out.nodes).toBe(6);
    // A pool of its own is written (n, 0), as PyTorch writes a graph's own pool.
    expect(out.pool[0]).toBeGreaterThan(0);
    expect(out.pool[1]).toBe(0);
    expect(out.uses).toBe(1);
    expect(out.state).toEqual({ underway: false, deferredFrees: 0 });
    expect(out.valid).toBeNull();
  });

  it('forks a side stream with events and joins it back; the side stream allocates from the graph\'s pool', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const side = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const B = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const fork = new compute.Event();
      const join = new compute.Event();
      const g = compute.captureGraph(s, () => {
        fork.record(s);
        side.waitEvent(fork);        // the side stream joins the capture
        double(B, side);             // its temporary: from the graph's pool, on the side stream
        double(A, s);
        join.record(side);
        s.waitEvent(join);           // joined back before the capture ends
      });
      const streams = memory.memory_snapshot().filter((seg) => seg.segment_pool_id[0] === g.pool[0] && seg.segment_pool_id[1] === g.pool[1])
        .map((seg) => seg.stream).sort();
      for (let i = 0; i < 3; i++) g.launch();
      const r = { a: read(A)[0], b: read(B)[0], streams, expected: [s.handle, side.handle].sort() };
      g.destroy(); A.free(); B.free(); fork.destroy(); join.destroy();
      r.valid = memory.check_invariants();
      return r;`);
    expect(out.a).toBe(8);  // doubled by each of three launches
    expect(out.b).toBe(8);
    expect(out.streams).toEqual(out.expected);
    expect(out.valid).toBeNull();
  });

  it('refuses to free a buffer a live graph names, until the graph is destroyed', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const r = {};
      const g = compute.captureGraph(s, () => {
        double(A, s);
        try { A.free(); } catch (e) { r.during = e.code; }  // allocated before the capture
      });
      try { A.free(); } catch (e) { r.after = [e.code, e.message]; }
      r.disposed = A.disposed;
      g.destroy();
      A.free();
      r.freed = A.disposed;
      r.destroyedLaunch = (() => { try { g.launch(); } catch (e) { return e.code; } })();
      return r;`);
    expect(out.during).toBe('ERR_CCA_BUFFER_IN_GRAPH');
    expect(out.after[0]).toBe('ERR_CCA_BUFFER_IN_GRAPH');
    expect(out.after[1]).toMatch(/1 live CUDA graph names it.*destroy the graph first/);
    expect(out.disposed).toBe(false);
    expect(out.freed).toBe(true);
    expect(out.destroyedLaunch).toBe('ERR_CCA_INVALID_HANDLE');
  });

  it('a callback that throws ends the capture, releases its pool and rethrows', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s });
      const reserved = memory.memory_reserved();
      let error;
      try {
        compute.captureGraph(s, () => {
          double(A, s);
          cuda.alloc(8 << 20, { stream: s }).free();
          throw new Error('boom');
        });
      } catch (e) { error = e.message; }
      const state = compute.captureState();
      // The capture's pool held only freed blocks: with its use given back, it goes at once.
      const poolsLeft = memory.memory_snapshot().filter((seg) => seg.segment_pool_id[1] !== 0).length;
      memory.empty_cache();
      const afterEmpty = memory.memory_reserved();
      const again = compute.captureGraph(s, () => double(A, s));
      again.launch();
      again.destroy();
      A.free();
      return { error, state, reserved, afterEmpty, poolsLeft, valid: memory.check_invariants() };`);
    expect(out.error).toBe('boom');
    expect(out.poolsLeft).toBe(0);
    expect(out.afterEmpty).toBe(out.reserved);
    expect(out.state).toEqual({ underway: false, deferredFrees: 0 });
    expect(out.valid).toBeNull();
  });

  it('refuses what a capture forbids with ERR_CCA_CAPTURE_UNSUPPORTED, and the capture survives', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const ev = new compute.Event();
      const codes = [];
      const settled = [];
      const g = compute.captureGraph(s, () => {
        for (const f of [() => memory.empty_cache(), () => A.copyFrom(ramp(0)), () => A.fill(0),
          () => A.copyTo(new Float32Array(N)), () => s.done(), () => ev.done(), () => cuda.synchronize(),
          () => compute.captureGraph(s, () => {})]) {
          // done() reports through its promise; the rest throw at once.
          const i = codes.push(null) - 1;
          try {
            const p = f();
            if (p instanceof Promise) settled.push(p.catch((e) => { codes[i] = e.code; }));
          } catch (e) { codes[i] = e.code; }
        }
        double(A, s);
      });
      await Promise.all(settled);
      g.launch();
      const r = { codes, a0: read(A)[0] };
      g.destroy(); A.free(); ev.destroy();
      return r;`);
    expect(out.codes).toEqual(Array(8).fill('ERR_CCA_CAPTURE_UNSUPPORTED'));
    expect(out.a0).toBe(2);
  });

  it('refuses a callback that returns a promise, the default stream, and bad options', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const codes = [];
      for (const f of [
        () => compute.captureGraph(s, async () => {}),
        () => compute.captureGraph(cuda.defaultStream(), () => {}),
        () => compute.captureGraph(s, () => {}, { mode: 'loose' }),
        () => compute.captureGraph(s, () => {}, { pool: 3 }),
        () => compute.captureGraph(s, () => {}, { pools: 1 }),
        () => compute.captureGraph(s, 'not a function'),
      ]) {
        try { f(); codes.push(null); } catch (e) { codes.push(e.code ?? e.name); }
      }
      return { codes, state: compute.captureState(), valid: memory.check_invariants() };`);
    expect(out.codes[0]).toBe('ERR_INVALID_ARG_TYPE');
    expect(out.codes[1]).toBe('ERR_CCA_CAPTURE_UNSUPPORTED');
    // A misspelled option is a TypeError naming it, as everywhere else.
    expect(out.codes.slice(2)).toEqual(Array(4).fill('ERR_INVALID_ARG_TYPE'));
    expect(out.state).toEqual({ underway: false, deferredFrees: 0 });
    expect(out.valid).toBeNull();
  });

  it('graphs share a graphPoolHandle() or a MemPool; pool segments show in snapshots and stats', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const handle = compute.graphPoolHandle();
      const g1 = compute.captureGraph(s, () => double(A, s), { pool: handle });
      const g2 = compute.captureGraph(s, () => double(A, s), { pool: g1 });
      const snap = memory.memory_snapshot();
      const poolSegments = snap.filter((seg) => seg.segment_pool_id[1] === handle.id[1]).length;
      const stats = memory.memory_stats();
      const mp = new MemPool();
      const g3 = compute.captureGraph(s, () => double(A, s), { pool: mp });
      const inMemPool = mp.snapshot().length;
      g1.launch(); g2.launch(); g3.launch();
      const a0 = read(A)[0];
      g1.destroy();
      const kept = memory.memory_snapshot().filter((seg) => seg.segment_pool_id[1] === handle.id[1]).length;
      g2.destroy(); g3.destroy(); mp.release(); A.free();
      memory.empty_cache();
      return { same: g1.pool[1] === g2.pool[1] && g1.pool[1] === handle.id[1], poolSegments, kept, inMemPool, a0,
        privateReserved: stats[\`reserved_bytes_by_private_pools.0_\${handle.id[1]}.all.current\`] ?? null,
        reserved: memory.memory_reserved() };`);
    expect(out.same).toBe(true);
    expect(out.poolSegments).toBe(1);
    expect(out.kept).toBe(1);
    expect(out.inMemPool).toBe(1);
    expect(out.a0).toBe(8);
    expect(out.privateReserved).toBe(2 << 20);  // the shared pool's one small segment
    expect(out.reserved).toBe(0);
  });

  it("with routing switched off (the test hook), eager work takes the graph's memory and a replay overwrites it", () => {
    const script = (route: boolean) => `
      graphs.setCaptureRoutingForTests(${route});
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const g = compute.captureGraph(s, () => double(A, s));
      const B = cuda.alloc(N * 4, { stream: s });
      fill.launch({ grid: 1, block: N, stream: s }, B, 7, N);
      g.launch();
      return Array.from(B.copyTo(new Uint32Array(N))).slice(0, 3);`;
    expect(run(script(true))).toEqual([7, 7, 7]);
    expect(run(script(false))).not.toEqual([7, 7, 7]);
  });
});

describe.skipIf(!ready)('a history with graph pools', () => {
  it('names each graph pool on its segments and trace entries, and replays exactly on the simulator', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cca-graph-history-')), 'graphs.json');
    const out = run(`
      memory._record_memory_history({ enabled: 'all', maxEntries: 100000 });
      const s = cuda.Stream.create();
      const A = cuda.alloc(N * 4, { stream: s }).copyFrom(ramp(1));
      const shared = compute.graphPoolHandle();
      const kept = [];
      for (let i = 0; i < 6; i++) {
        const pool = i % 3 === 0 ? undefined : shared;
        const g = compute.captureGraph(s, () => {
          double(A, s);
          const big = cuda.alloc((i + 1) * (3 << 20), { stream: s });
          fill.launch({ grid: 1, block: N, stream: s }, big, i, N);
          big.free();
        }, pool ? { pool } : undefined);
        g.launch();
        if (i % 2 === 0) g.destroy(); else kept.push(g);
        const eager = cuda.alloc((i + 2) << 20, { stream: s });
        eager.free();
        if (i === 3) memory.empty_cache();
      }
      await memory._dump_snapshot(${JSON.stringify(file)});
      return { pools: memory.memory_snapshot().map((seg) => seg.segment_pool_id[1]).filter((n) => n !== 0).length };`);
    expect(out.pools).toBeGreaterThan(0);
    const snap = loadSnapshot(file);
    const pooled = snap.device_traces[0]!.filter((e) => e.pool_id !== undefined && (e.pool_id[0] !== 0 || e.pool_id[1] !== 0));
    // Both kinds: the graphs' own pools (n, 0) and the shared handle's (0, n).
    expect(pooled.some((e) => e.pool_id![0] !== 0)).toBe(true);
    expect(pooled.some((e) => e.pool_id![1] !== 0)).toBe(true);
    expectExact({ report: replayOnBoth(snap) } as never);
  });
});

describe.skipIf(!existsSync(fileURLToPath(ENTRY)))('on the simulator', () => {
  it('refuses captures with a code naming the cuda backend', () => {
    const out = run(`
      const s = cuda.Stream.create();
      const r = [];
      for (const f of [() => compute.captureGraph(s, () => {}), () => compute.graphPoolHandle()]) {
        try { f(); r.push(null); } catch (e) { r.push([e.code, e.message]); }
      }
      return r;`, { CCA_DEVICE: 'sim' });
    expect(out[0][0]).toBe('ERR_CCA_CAPTURE_UNSUPPORTED');
    expect(out[0][1]).toMatch(/need the cuda backend.*simulated/);
    expect(out[1][0]).toBe('ERR_CCA_CAPTURE_UNSUPPORTED');
  });
});
