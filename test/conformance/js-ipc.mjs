// CUDA IPC between two processes through the JS API, on whichever cuda driver this process
// got: the fake driver in CI (its memory is memfd pages both processes map), a real GPU in
// bench/gpu/run-on-gpu.sh. This process exports; a child (this script with `child`, forked)
// opens, reads, writes, runs a kernel, and closes on command. Plain node:assert; ends with
// "N passed, M failed".
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cuda, compute, memory } from '../../dist/index.js';
import { runCases } from './run-cases.mjs';

const fake = cuda.deviceName(0).startsWith('Fake CUDA');
const image = fake ? 'FAKECUBIN\nfill_u32\n' : readFileSync(new URL('../fixtures/kernels/kernels.sm_90.cubin', import.meta.url));
const toHex = (bytes) => Buffer.from(bytes).toString('hex');
const fromHex = (hex) => new Uint8Array(Buffer.from(hex, 'hex'));

if (process.argv[2] === 'child') {
  // The importer: each message names an action on the buffers it holds, by id.
  const open = new Map();
  let fill;
  process.on('message', (m) => {
    try {
      let reply = {};
      if (m.op === 'open') {
        const b = cuda.openIpcHandle(fromHex(m.handle));
        open.set(m.id, b);
        reply = { size: b.size, imported: b.imported };
      } else if (m.op === 'read') {
        reply = { bytes: Array.from(open.get(m.id).copyTo(new Uint8Array(m.length))) };
      } else if (m.op === 'write') {
        open.get(m.id).copyFrom(new Uint8Array(m.bytes));
      } else if (m.op === 'kernel') {
        fill ??= compute.Module.load(image).getKernel('fill_u32', ['ptr', 'u32', 'u32']);
        fill.launch({ grid: 1, block: 256 }, open.get(m.id), m.value, m.count);
        cuda.synchronize();
      } else if (m.op === 'misuse') {
        // What docs/interop.md says an imported buffer refuses: it is not this process's.
        const b = open.get(m.id);
        const code = (fn) => {
          try {
            fn();
            return 'accepted';
          } catch (e) {
            return e.code;
          }
        };
        reply = {
          recordStream: code(() => cuda.recordStream(b, cuda.Stream.create())),
          toDLPack: code(() => b.toDLPack({ dtype: 'u8', shape: [16] })),
          ipcHandle: code(() => b.ipcHandle()),
        };
      } else if (m.op === 'close') {
        open.get(m.id).free();
        open.delete(m.id);
      } else if (m.op === 'exit') {
        process.exit(0);
      }
      process.send({ ok: true, ...reply });
    } catch (e) {
      process.send({ ok: false, code: e.code, message: e.message });
    }
  });
  process.send({ ok: true, ready: true });
} else {
  const child = fork(fileURLToPath(import.meta.url), ['child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const replies = [];
  let waiting;
  child.on('message', (m) => (waiting ? (waiting(m), (waiting = undefined)) : replies.push(m)));
  const next = () => (replies.length ? Promise.resolve(replies.shift()) : new Promise((r) => (waiting = r)));
  const ask = async (m) => {
    child.send(m);
    return next();
  };
  const must = async (m) => {
    const r = await ask(m);
    assert.equal(r.ok, true, `${m.op}: ${r.code} ${r.message}`);
    return r;
  };
  await next();  // ready
  const inUse = () => memory.memory_stats(0)['allocation.all.current'];
  const reserved = () => memory.memory_stats(0)['reserved_bytes.all.current'];

  const cases = [
    ['the other process reads what this one wrote, and this one reads its writes', async () => {
      const buf = cuda.alloc(4096);
      buf.copyFrom(new Uint8Array(4096).map((_, i) => i & 0xff));
      const opened = await must({ op: 'open', id: 1, handle: toHex(buf.ipcHandle()) });
      assert.deepEqual(opened, { ok: true, size: 4096, imported: true });
      const seen = await must({ op: 'read', id: 1, length: 16 });
      assert.deepEqual(seen.bytes, Array.from({ length: 16 }, (_, i) => i));
      await must({ op: 'write', id: 1, bytes: [9, 8, 7, 6] });
      assert.deepEqual(Array.from(buf.copyTo(new Uint8Array(4))), [9, 8, 7, 6]);
      const misuse = await must({ op: 'misuse', id: 1 });
      assert.deepEqual(misuse, { ok: true, recordStream: 'ERR_CCA_INVALID_POINTER', toDLPack: 'ERR_CCA_INVALID_POINTER',
        ipcHandle: 'ERR_CCA_IPC_UNSUPPORTED' });
      await must({ op: 'kernel', id: 1, value: 0xabcdef01, count: 8 });
      assert.deepEqual(Array.from(buf.copyTo(new Uint32Array(8))), Array(8).fill(0xabcdef01));
      await must({ op: 'close', id: 1 });
      buf.free();
    }],
    ['a buffer inside a shared segment: the offset travels with the handle', async () => {
      const first = cuda.alloc(1000);
      const second = cuda.alloc(2000);  // the same small segment, further in
      second.fill(0x5a);
      await must({ op: 'open', id: 2, handle: toHex(second.ipcHandle()) });
      assert.deepEqual((await must({ op: 'read', id: 2, length: 4 })).bytes, [0x5a, 0x5a, 0x5a, 0x5a]);
      await must({ op: 'close', id: 2 });
      first.free();
      second.free();
    }],
    ['freed while open elsewhere, the memory stays until the importer closes and ipc_collect runs', async () => {
      const before = inUse();
      const buf = cuda.alloc(8 << 20);
      await must({ op: 'open', id: 3, handle: toHex(buf.ipcHandle()) });
      buf.free();
      assert.equal(inUse(), before + 1);
      memory.empty_cache();
      assert.ok(reserved() >= 8 << 20, 'empty_cache kept the shared segment');
      assert.equal(cuda.ipc_collect(), 0);  // still open in the child
      await must({ op: 'write', id: 3, bytes: [1, 2, 3] });  // and still usable there
      await must({ op: 'close', id: 3 });
      assert.equal(cuda.ipc_collect(), 1);
      assert.equal(inUse(), before);
      memory.empty_cache();
    }],
    ['an allocator short of memory collects what importers let go of, by itself', async () => {
      memory.empty_cache();
      const [free] = memory.mem_get_info(0);
      const big = Math.floor((free * 0.6) / (2 << 20)) * (2 << 20);  // two would not fit
      const buf = cuda.alloc(big);
      await must({ op: 'open', id: 5, handle: toHex(buf.ipcHandle()) });
      buf.free();
      await must({ op: 'close', id: 5 });
      const retries = memory.memory_stats(0).num_alloc_retries;
      const again = cuda.alloc(big);  // no room for a second: the free-memory callback collects the first
      assert.equal(memory.memory_stats(0).num_alloc_retries, retries);
      assert.equal(cuda.ipc_collect(), 0);
      again.free();
      memory.empty_cache();
    }],
    ['bad handles are refused with codes', async () => {
      const buf = cuda.alloc(4096);
      const handle = buf.ipcHandle();
      assert.throws(() => cuda.openIpcHandle(handle), { code: 'ERR_CCA_IPC_SAME_PROCESS' });
      assert.throws(() => cuda.openIpcHandle(new Uint8Array(120)), { code: 'ERR_CCA_IPC_HANDLE' });
      assert.throws(() => cuda.openIpcHandle(handle.subarray(1)), { code: 'ERR_CCA_IPC_HANDLE' });
      assert.throws(() => cuda.openIpcHandle('handle'), { code: 'ERR_INVALID_ARG_TYPE' });
      buf.free();  // nobody opened it: freed at once, and the handle is stale
      const stale = await ask({ op: 'open', id: 4, handle: toHex(handle) });
      assert.equal(stale.ok, false);
      assert.equal(stale.code, 'ERR_CCA_IPC_STALE');
    }],
    ['expandable segments cannot be shared with legacy handles', () => {
      memory.empty_cache();  // no cached block of an ordinary segment to serve it
      memory._set_allocator_settings('expandable_segments:True');
      try {
        const buf = cuda.alloc(4096);
        assert.throws(() => buf.ipcHandle(), { code: 'ERR_CCA_IPC_UNSUPPORTED' });
        buf.free();
      } finally {
        memory._set_allocator_settings('expandable_segments:False');
        memory.empty_cache();
      }
    }],
  ];
  await runCases(cases, memory);
  child.send({ op: 'exit' });
}
