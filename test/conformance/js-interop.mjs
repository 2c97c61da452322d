// The C ABI from a consumer addon written in C (test/interop/consumer.c, compiled here
// against the packaged cca.h), on whichever backend this process got: the simulator, the
// fake driver in CI, a real GPU in bench/gpu/run-on-gpu.sh. On a driver, the consumer also
// makes a stream of its own and switches to a context of its own, as another library
// would. Plain node:assert; ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCases } from './run-cases.mjs';
import { buildConsumer } from '../interop/build-consumer.mjs';
import { cuda, interop, memory, monitoring, Stream } from '../../dist/index.js';

const simulated = cuda.runtimeInfo().backend === 'sim';
const fake = !simulated && cuda.deviceName(0).startsWith('Fake CUDA');
const driverPath = process.env.CCA_LIBCUDA_PATH || 'libcuda.so.1';
const dir = process.env.CCA_CONSUMER_DIR || mkdtempSync(join(tmpdir(), 'cca-consumer-'));
const consumer = createRequire(import.meta.url)(buildConsumer(interop.includeDir, dir));
const FLAGS = simulated ? 1 : 0;  // CCA_CLIENT_ALLOW_SIMULATED where the devices are simulated
const MiB = 1 << 20;

function open(name) {
  const r = consumer.open(name, FLAGS);
  assert.equal(r.status, 'CCA_OK', r.error);
  return r.client;
}
function ok(r) {
  assert.equal(r.status, 'CCA_OK', r.error);
  return r;
}
const usage = (name) => interop.clients(0).find((c) => c.name === name);

const cases = [
  ['the table is found at the address JS gives, and nowhere else', () => {
    assert.equal(consumer.attach(0n), false);
    assert.equal(typeof interop.allocatorApi(), 'bigint');
    assert.equal(consumer.attach(interop.allocatorApi()), true);
  }],
  ['a client opens with a valid name, and on simulated devices only when it accepts them', () => {
    if (simulated) {
      const r = consumer.open('refused', 0);
      assert.equal(r.status, 'CCA_ERR_SIMULATED');
      assert.match(r.error, /simulated.*CCA_CLIENT_ALLOW_SIMULATED/);
    }
    assert.equal(consumer.open('', FLAGS).status, 'CCA_ERR_INVALID_ARGUMENT');
    assert.equal(consumer.open('x'.repeat(65), FLAGS).status, 'CCA_ERR_INVALID_ARGUMENT');
    assert.equal(consumer.open('codec', 0x80).status, 'CCA_ERR_INVALID_ARGUMENT');
  }],
  ['its allocations carry its name: snapshot, memory_stats, interop.clients(), metrics', async () => {
    const c = open('codec');
    const a = ok(consumer.malloc(c, 0, 1000n, 0n));
    const b = ok(consumer.malloc(c, 0, BigInt(3 * MiB), 0n));
    const tagged = memory.memory_snapshot().flatMap((s) => s.blocks)
      .filter((blk) => blk.user_metadata === 'codec' && blk.state === 'active_allocated');
    assert.deepEqual(tagged.map((blk) => blk.requested_size).sort((x, y) => x - y), [1000, 3 * MiB]);
    // With no native stack, one frame names the client, so viewers do not read the blocks as
    // older than the history (memory_viz says so of a block without frames).
    for (const blk of tagged) assert.match(blk.frames[0]?.name ?? '', /allocated by native code \(codec\)/);
    const stats = memory.memory_stats(0);
    assert.equal(stats['clients.codec.allocated_bytes.current'], 1000 + 3 * MiB);
    assert.equal(stats['clients.codec.allocation.current'], 2);
    assert.deepEqual(usage('codec').allocatedBytes, { current: 1000 + 3 * MiB, peak: 1000 + 3 * MiB });
    assert.deepEqual(monitoring.readSamples()[0].clients.find((x) => x.name === 'codec'),
      { name: 'codec', bytes: 1000 + 3 * MiB, allocations: 2 });
    // Through prom-client where it is installed (CI; the GPU runner has only the runtime dependencies).
    const prom = await import('prom-client').catch(() => undefined);
    if (prom) {
      const registry = new (prom.default ?? prom).Registry();
      const handle = await monitoring.registerPrometheus({ registry });
      const text = await registry.metrics();
      assert.match(text, new RegExp(`cca_client_allocated_bytes\\{device="0",client="codec"\\} ${1000 + 3 * MiB}`));
      assert.match(text, /cca_client_allocations\{device="0",client="codec"\} 2/);
      handle.unregister();
    }
    ok(consumer.free(c, 0, a.ptr));
    ok(consumer.free(c, 0, b.ptr));
    assert.equal(usage('codec').allocations.current, 0);
    assert.equal(usage('codec').numFrees, 2);
    consumer.close(c);
    assert.equal(usage('codec').open, 0);
  }],
  ['with history keeping stacks, a native caller\'s memory carries its native backtrace', () => {
    const c = open('decoder');
    memory._record_memory_history({ enabled: 'all', context: 'all', stacks: 'all', max_entries: 1000 });
    const p = ok(consumer.malloc(c, 0, 5000n, 0n)).ptr;
    const block = memory._snapshot().segments.flatMap((s) => s.blocks).find((b) => b.address === Number(p));
    // Innermost first: the consumer's exported caller (named by the dynamic symbol table), in
    // the consumer's module; none of the allocator's own frames; nothing below the executable.
    assert.equal(block.frames[0].name, 'consumer_malloc');
    assert.match(block.frames[0].filename, /consumer[^/]*\.node$/);
    // Every frame is the consumer's: the allocator's own are dropped, and the walk stops at
    // the executable (node calling the consumer's N-API function).
    assert.ok(block.frames.every((f) => /consumer[^/]*\.node$/.test(f.filename) && f.line === 0), JSON.stringify(block.frames));
    assert.equal(memory._allocation_traceback(Number(p))?.[0]?.name, 'consumer_malloc');
    ok(consumer.free(c, 0, p));
    const t = memory._snapshot().device_traces[0].filter((e) => e.addr === Number(p));
    const alloc = t.find((e) => e.action === 'alloc');
    const freed = t.find((e) => e.action === 'free_requested');
    assert.equal(alloc.frames[0].name, 'consumer_malloc');
    // Context 'all': the free's stack too. Its caller is static: named from the module's
    // full symbol table, which dladdr does not read.
    assert.match(freed.frames[0].filename, /consumer[^/]*\.node$/);
    assert.equal(freed.frames[0].name, 'do_free');
    assert.equal(block.frames[1]?.name, 'do_malloc');
    // stacks 'js': the one frame that names the client, as with history off.
    memory._record_memory_history({ enabled: 'all', context: 'all', stacks: 'js', max_entries: 1000 });
    const q = ok(consumer.malloc(c, 0, 5000n, 0n)).ptr;
    const named = memory._snapshot().segments.flatMap((s) => s.blocks).find((b) => b.address === Number(q));
    assert.match(named.frames[0].name, /allocated by native code \(decoder\); no native stack recorded/);
    ok(consumer.free(c, 0, q));
    memory._record_memory_history(null);
    consumer.close(c);
  }],
  ['bad calls are statuses with messages, and change nothing', () => {
    const c = open('bad-calls');
    const other = open('other');
    const js = cuda.alloc(4096);
    const before = memory.memory_stats(0)['allocation.all.current'];
    const p = ok(consumer.malloc(c, 0, 4096n, 0n)).ptr;
    const expectStatus = (r, status, message) => {
      assert.equal(r.status, status);
      assert.match(r.error, message);
    };
    expectStatus(consumer.free(c, 0, BigInt(js.ptr)), 'CCA_ERR_INVALID_POINTER', /another client or to JS/);
    expectStatus(consumer.free(other, 0, p), 'CCA_ERR_INVALID_POINTER', /another client/);
    expectStatus(consumer.free(c, 0, p + 8n), 'CCA_ERR_INVALID_POINTER', /points inside/);
    expectStatus(consumer.free(c, 0, 0x10n), 'CCA_ERR_INVALID_POINTER', /not allocated by the caching allocator/);
    expectStatus(consumer.free(c, 99, p), 'CCA_ERR_INVALID_DEVICE', /device/);
    expectStatus(consumer.malloc(c, 0, 1n << 50n, 0n), 'CCA_ERR_OUT_OF_MEMORY', /CUDA out of memory\. Tried to allocate/);
    expectStatus(consumer.malloc(c, 0, 64n, 0x1234n), 'CCA_ERR_INVALID_STREAM', /never adopted/);
    expectStatus(consumer.malloc(c, -1, 64n, 0n), 'CCA_ERR_INVALID_DEVICE', /device/);
    expectStatus(consumer.getAllocation(0, 0x10n), 'CCA_ERR_INVALID_POINTER', /inside no live allocation/);
    expectStatus(consumer.adopt(0, 0n), 'CCA_ERR_INVALID_STREAM', /default stream/);
    expectStatus(consumer.release(0, 0x1234n), 'CCA_ERR_INVALID_STREAM', /not an adopted stream/);
    expectStatus(consumer.recordStream(0, 0x10n, 0n), 'CCA_ERR_INVALID_POINTER', /not a live allocation/);
    ok(consumer.free(c, 0, p));
    expectStatus(consumer.free(c, 0, p), 'CCA_ERR_INVALID_POINTER', /double free/);
    consumer.close(c);
    expectStatus(consumer.malloc(c, 0, 64n, 0n), 'CCA_ERR_CLIENT', /closed/);
    assert.equal(memory.memory_stats(0)['allocation.all.current'], before);
    // The lookup sees JS's buffers too, from any interior address.
    const found = ok(consumer.getAllocation(0, BigInt(js.ptr + 100)));
    assert.equal(found.base, BigInt(js.ptr));
    assert.equal(found.size, 4096n);
    js.free();
    consumer.close(other);
  }],
  ['a JS stream serves the consumer, and record_stream orders reuse', async () => {
    const c = open('streams');
    const s = Stream.create();
    const p = ok(consumer.malloc(c, 0, 8192n, BigInt(s.handle)));
    assert.equal(ok(consumer.getAllocation(0, p.ptr)).stream, BigInt(s.handle));
    ok(consumer.recordStream(0, p.ptr, 0n));
    ok(consumer.free(c, 0, p.ptr));
    await s.done();
    cuda.synchronize();
    s.destroy();
    consumer.close(c);
  }],
  ['several threads allocate and free at once; the invariants hold', () => {
    const c = open('threads');
    const r = consumer.hammer(c, 0, 8, 3000, 0n);
    assert.equal(r.failures, 0, r.firstError);
    assert.equal(memory.check_invariants(), null);
    assert.equal(usage('threads').allocations.current, 0);
    assert.equal(usage('threads').numAllocs, usage('threads').numFrees);
    consumer.close(c);
  }],
  ['memory info and empty_cache through the table', () => {
    const info = ok(consumer.memGetInfo(0));
    assert.ok(info.total > 0n && info.free <= info.total);
    ok(consumer.emptyCache(0));
    assert.equal(consumer.emptyCache(99).status, 'CCA_ERR_INVALID_DEVICE');
  }],
  ['a buffer JS has just freed serves the consumer\'s next malloc on the same thread', () => {
    // free() leaves the pointer in the thread's pending list; the C ABI call hands it over
    // before its own work (native/interop/thread_frees.h), so the block is reused, not a new one.
    const c = open('reuser');
    const buf = cuda.alloc(3 * MiB);
    const ptr = BigInt(buf.ptr);
    buf.free();
    const a = ok(consumer.malloc(c, 0, BigInt(3 * MiB), 0n));
    assert.equal(a.ptr, ptr);
    ok(consumer.free(c, 0, a.ptr));
    consumer.close(c);
  }],
  ['a buffer leaves as a DLPack tensor; its memory is freed after both free() and the deleter', () => {
    const allowSimulated = simulated;
    const inUse = () => memory.memory_stats(0)['allocation.all.current'];
    const before = inUse();
    memory._record_memory_history({ enabled: 'all', context: 'all', stacks: 'all' });
    const buf = cuda.alloc(4096);
    const whole = buf.toDLPack({ dtype: 'f32', shape: [16, 32], allowSimulated });
    const t = consumer.dlpackRead(whole);
    assert.deepEqual({ ...t, data: undefined }, { major: 1, minor: 0, data: undefined, deviceType: 2, deviceId: 0,
      code: 2, bits: 32, lanes: 1, byteOffset: 0, flags: 0, hasDeleter: true, shape: [16, 32], strides: [32, 1] });
    assert.equal(t.data, BigInt(buf.ptr));
    // A strided view at an offset; the elements must stay inside the buffer.
    const view = buf.toDLPack({ dtype: 'u16', shape: [4, 8], strides: [16, 2], byteOffset: 64, allowSimulated });
    assert.deepEqual(consumer.dlpackRead(view).strides, [16, 2]);
    assert.throws(() => buf.toDLPack({ dtype: 'f64', shape: [513], allowSimulated }), { code: 'ERR_CCA_OUT_OF_BOUNDS' });
    assert.throws(() => buf.toDLPack({ dtype: 'f32', shape: [2], byteOffset: 4092, allowSimulated }), { code: 'ERR_CCA_OUT_OF_BOUNDS' });
    assert.throws(() => buf.toDLPack({ dtype: 'f17', shape: [2], allowSimulated }), { code: 'ERR_INVALID_ARG_VALUE' });
    assert.throws(() => buf.toDLPack({ dtype: 'f32', shape: [2, 2], strides: [1], allowSimulated }), { code: 'ERR_INVALID_ARG_VALUE' });
    if (simulated) assert.throws(() => buf.toDLPack({ dtype: 'f32', shape: [2] }), { code: 'ERR_CCA_SIMULATED' });
    buf.free();  // two tensors out: the memory stays
    assert.equal(inUse(), before + 1);
    consumer.dlpackDelete(view, true);  // a deleter on another thread
    assert.equal(inUse(), before + 1);
    consumer.dlpackDelete(whole, false);  // the last: the memory goes back to the cache
    assert.equal(inUse(), before);
    // The deleter's free carries the allocation's frames (issue 43), not none.
    const freed = memory._snapshot().device_traces[0].filter((e) => e.addr === buf.ptr && e.action === 'free_requested').at(-1);
    assert.ok(freed.frames.length > 0, 'the deleter\'s free has frames');
    memory._record_memory_history(null);
    assert.throws(() => buf.free(), { code: 'ERR_CCA_INVALID_POINTER' });
    // The other order: the deleter first, then free() gives it back at once.
    const second = cuda.alloc(256);
    consumer.dlpackDelete(second.toDLPack({ dtype: 'u8', shape: [256], allowSimulated }), false);
    assert.equal(inUse(), before + 1);
    second.free();
    assert.equal(inUse(), before);
    assert.equal(memory.check_invariants(), null);
  }],
];

if (simulated) {
  cases.push(['the devices cannot be replaced while a client is open', () => {
    const c = open('pinning');
    assert.throws(() => cuda.sim.configure({ devices: 1 }), { code: 'ERR_CCA_CLIENTS_OPEN' });
    consumer.close(c);
  }]);
} else {
  cases.push(['a stream of the consumer\'s own is adopted, used, released and left to it', () => {
    const c = open('own-stream');
    const stream = consumer.driverStream(driverPath, 0);
    assert.notEqual(stream, 0n);
    assert.equal(consumer.malloc(c, 0, 4096n, stream).status, 'CCA_ERR_INVALID_STREAM');
    ok(consumer.adopt(0, stream));
    const p = ok(consumer.malloc(c, 0, 4096n, stream));
    ok(consumer.free(c, 0, p.ptr));
    ok(consumer.release(0, stream));
    assert.equal(consumer.malloc(c, 0, 4096n, stream).status, 'CCA_ERR_INVALID_STREAM');
    assert.equal(consumer.driverStreamDestroy(stream), true);  // released, not destroyed: the consumer's to destroy
    // The fake driver knows a destroyed stream; a real one cannot tell (the handle dangles,
    // and using it is undefined behaviour, a crash on the H200), so adopt only live streams.
    if (fake) assert.equal(consumer.adopt(0, stream).status, 'CCA_ERR_INVALID_STREAM');
    consumer.close(c);
  }]);
  cases.push(['a graph captured on the consumer\'s own stream allocates from a private pool, declared through minor 1', () => {
    const c = open('own-capture');
    const stream = consumer.driverStream(driverPath, 0);
    ok(consumer.adopt(0, stream));
    const eager = ok(consumer.malloc(c, 0, 4096n, stream));
    ok(consumer.free(c, 0, eager.ptr));
    assert.equal(consumer.captureBegin(0, stream, 0n).status, 'CCA_ERR_CAPTURE');  // not capturing yet
    assert.equal(consumer.driverCapture(stream, true), 0);
    const { pool } = ok(consumer.captureBegin(0, stream, 0n));
    assert.ok(pool > 0n);
    const inside = ok(consumer.malloc(c, 0, 4096n, stream));
    assert.notEqual(inside.ptr, eager.ptr);  // not the cached eager block: the graph's pool
    const poolSegments = () => memory.memory_snapshot().filter((s) => s.segment_pool_id[1] === Number(pool));
    assert.equal(poolSegments().length, 1);
    ok(consumer.free(c, 0, inside.ptr));
    assert.throws(() => memory.empty_cache(), { code: 'ERR_CCA_CAPTURE_UNSUPPORTED' });
    assert.equal(consumer.emptyCache(0).status, 'CCA_ERR_CAPTURE');
    assert.equal(consumer.driverCapture(stream, false), 0);  // the capture was not invalidated
    ok(consumer.captureEnd(0, stream));
    assert.equal(consumer.captureEnd(0, stream).status, 'CCA_ERR_CAPTURE');
    assert.equal(poolSegments().length, 1);  // the graph's, until its use is given back
    ok(consumer.poolRelease(0, pool));
    assert.equal(poolSegments().length, 0);
    ok(consumer.release(0, stream));
    assert.equal(consumer.driverStreamDestroy(stream), true);
    consumer.close(c);
  }]);
  cases.push(['another library\'s context current: the allocator works in the primary one and leaves it', () => {
    const c = open('own-context');
    const before = consumer.foreignContextCalls();
    const r = ok(consumer.inOwnContext(c, 0, BigInt(64 * MiB)));
    assert.equal(r.contextKept, true);
    if (before >= 0) assert.equal(consumer.foreignContextCalls(), before);  // the fake driver counts them
    const y = cuda.alloc(1024);  // and JS's calls afterwards still work
    y.free();
    consumer.close(c);
  }]);
}

await runCases(cases, memory);
