// Kernels, events and stream ordering through the JS API, on whichever cuda driver this
// process got: the fake driver in CI (its CPU kernels of the same names), a real GPU in
// bench/gpu/run-on-gpu.sh (the CUBIN built from test/fixtures/kernels/kernels.cu, and a
// program compiled with NVRTC when there is one). Plain node:assert; ends with
// "N passed, M failed". With the argument `fault` it only checks a sticky kernel fault
// (the context is lost after it, so it runs in a process of its own).
import assert from 'node:assert/strict';
import { runCases } from './run-cases.mjs';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cuda, compute, memory } from '../../dist/index.js';

const fake = cuda.deviceName(0).startsWith('Fake CUDA');
const KERNELS = ['saxpy', 'fill_u32', 'fill_u64', 'affine', 'sum_f32', 'wait_flag', 'noop', 'trap'];
const image = fake
  ? `FAKECUBIN\n${KERNELS.join('\n')}\n`
  : readFileSync(new URL('../fixtures/kernels/kernels.sm_90.cubin', import.meta.url));
const module = compute.Module.load(image);
const k = {
  saxpy: module.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'u32']),
  fill32: module.getKernel('fill_u32', ['ptr', 'u32', 'u32']),
  fill64: module.getKernel('fill_u64', ['ptr', 'u64', 'u32']),
  affine: module.getKernel('affine', [{ struct: { size: 8, align: 4 } }, 'ptr', 'u32']),
  sum: module.getKernel('sum_f32', ['ptr', 'ptr', 'u32']),
  waitFlag: module.getKernel('wait_flag', ['ptr']),
  trap: module.getKernel('trap', []),
};
const grid = (n, block = 256) => ({ grid: Math.ceil(n / block), block });

if (process.argv[2] === 'fault') {
  const y = cuda.alloc(16);
  k.trap.launch({ grid: 1, block: 1 });
  let error;
  try {
    cuda.synchronize();
  } catch (e) {
    error = e;
  }
  assert.equal(error?.code, 'ERR_CCA_DEVICE_FAULT', String(error));
  // Sticky: a later, unrelated call fails the same way.
  assert.throws(() => y.copyTo(new Uint8Array(16)), (e) => e.code === 'ERR_CCA_DEVICE_FAULT' && /context is lost/.test(e.message));
  console.log('fault: sticky, ERR_CCA_DEVICE_FAULT');
  process.exit(0);
}

const cases = [];
const test = (name, fn) => cases.push([name, fn]);

test('the types are checked against the compiled kernel', () => {
  assert.equal(k.saxpy.signatureChecked, true);
  assert.throws(() => module.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'u64']), { code: 'ERR_CCA_KERNEL_SIGNATURE' });
  assert.throws(() => module.getKernel('saxpy', ['f32', 'ptr', 'ptr']), { code: 'ERR_CCA_KERNEL_SIGNATURE' });
  assert.throws(() => module.getKernel('no_such_kernel', []), { code: 'ERR_CCA_KERNEL_NOT_FOUND' });
  assert.ok(k.saxpy.attributes.maxThreadsPerBlock >= 256);
});

test('saxpy on our buffers', async () => {
  const n = 100_000;
  const xs = new Float32Array(n).map((_, i) => i);
  const x = cuda.alloc(n * 4).copyFrom(xs);
  const y = cuda.alloc(n * 4).copyFrom(new Float32Array(n).fill(1));
  k.saxpy.launch(grid(n), 2, x, y, n);
  const out = y.copyTo(new Float32Array(n));
  for (const i of [0, 1, 4097, n - 1]) assert.equal(out[i], 2 * i + 1);
  x.free();
  y.free();
});

test('views, 64-bit and struct arguments', () => {
  const b = cuda.alloc(64 * 8).fill(0);
  k.fill64.launch({ grid: 1, block: 64 }, b.view(8 * 8, 4 * 8), 0x1234_5678_9abc_def0n, 4);
  const words = b.copyTo(new BigUint64Array(64));
  assert.deepEqual([words[7], words[8], words[11], words[12]], [0n, 0x1234_5678_9abc_def0n, 0x1234_5678_9abc_def0n, 0n]);
  assert.throws(() => k.fill64.launch({ grid: 1, block: 1 }, b, 5, 1), (e) => e.code === 'ERR_INVALID_ARG_TYPE' && /5n/.test(e.message));
  const y = cuda.alloc(16).copyFrom(new Float32Array([1, 2, 3, 4]));
  k.affine.launch({ grid: 1, block: 4 }, new Float32Array([10, 0.5]), y, 4);
  assert.deepEqual([...y.copyTo(new Float32Array(4))], [10.5, 20.5, 30.5, 40.5]);
  b.free();
  y.free();
});

test('a reduction', () => {
  const n = 4096;
  const x = cuda.alloc(n * 4).copyFrom(new Float32Array(n).fill(0.5));
  const out = cuda.alloc(4).fill(0);
  k.sum.launch(grid(n), x, out, n);
  assert.equal(out.copyTo(new Float32Array(1))[0], n / 2);
  x.free();
  out.free();
});

// A kernel spinning on a flag stands in for slow work: what is queued behind it waits.
function slowStream() {
  const flag = cuda.alloc(4).fill(0);
  const stream = cuda.Stream.create();
  k.waitFlag.launch({ grid: 1, block: 1, stream }, flag);
  return { stream, release: () => flag.copyFrom(new Uint32Array([1])), flag };
}

test('producer and consumer on two streams, ordered by an event', async () => {
  const n = 1 << 16;
  const producer = slowStream();
  const consumer = cuda.Stream.create();
  const x = cuda.alloc(n * 4, { stream: producer.stream });
  const y = cuda.alloc(n * 4, { stream: consumer }).copyFrom(new Float32Array(n).fill(1));
  k.fill32.launch(grid(n), x, 0x40000000, n);  // 2.0f, on the producer's (busy) stream
  const ready = new compute.Event().record(producer.stream);
  consumer.waitEvent(ready);
  k.saxpy.launch({ ...grid(n), stream: consumer }, 3, x, y, n);  // x is recorded on the consumer
  const done = consumer.done();
  assert.equal(consumer.query(), false, 'the consumer waits for the producer');
  producer.release();
  await done;
  const out = y.copyTo(new Float32Array(n));
  assert.equal(out[0], 7);
  assert.equal(out[n - 1], 7);
  for (const b of [x, y, producer.flag]) b.free();
  ready.destroy();
});

// The race that recording prevents: a kernel still queued on another stream writes to a
// buffer that was freed meanwhile. With recordStreams (the default) the block is not handed
// out again until that kernel ran; with it off, the next allocation gets the same memory and
// the late kernel overwrites its new owner's data (the negative control).
async function raceRun(recordStreams) {
  const n = 1024;
  const owner = cuda.Stream.create();
  const slow = slowStream();
  const first = cuda.alloc(n * 4, { stream: owner });
  k.fill32.launch({ ...grid(n), stream: slow.stream, recordStreams }, first, 0xdeadbeef, n);
  first.free();
  const second = cuda.alloc(n * 4, { stream: owner }).fill(0x11);
  const reused = second.ptr === first.ptr;
  slow.release();
  await slow.stream.done();
  const seen = second.copyTo(new Uint32Array(n));
  second.free();
  slow.flag.free();
  return { reused, overwritten: seen.some((v) => v === 0xdeadbeef) };
}

test('recorded streams: a freed buffer is not reused while a kernel on another stream may write it', async () => {
  assert.deepEqual(await raceRun(true), { reused: false, overwritten: false });
});

test('negative control: without recording, the late kernel overwrites the new owner', async () => {
  assert.deepEqual(await raceRun(false), { reused: true, overwritten: true });
});

test('pinned memory: async copies in, a kernel, async copies out, on two streams', async () => {
  const n = 1 << 20;
  const copies = cuda.Stream.create();
  const work = cuda.Stream.create();
  const hx = cuda.allocHost(n * 4);
  const hy = cuda.allocHost(n * 4);
  new Float32Array(hx.array.buffer).fill(2);
  const x = cuda.alloc(n * 4, { stream: copies }).copyFromAsync(hx);
  const y = cuda.alloc(n * 4, { stream: work }).fill(0);
  work.waitStream(copies);
  k.saxpy.launch({ ...grid(n), stream: work }, 3, x, y, n);
  y.copyToAsync(hy);
  hx.free();  // its block waits for the copy before anyone gets it again
  await work.done();
  const out = new Float32Array(hy.array.buffer);
  assert.deepEqual([out[0], out[n - 1]], [6, 6]);
  const z = cuda.alloc(n * 4, { stream: work });
  z.copyFromAsync(y.view(0, n * 4));
  z.copyToAsync(hy);
  await work.done();
  assert.equal(new Float32Array(hy.array.buffer)[n >> 1], 6);
  for (const b of [x, y, z, hy]) b.free();
  const before = memory.host_memory_stats();
  memory.empty_host_cache();  // both blocks' copies are done: both go back
  const after = memory.host_memory_stats();
  assert.equal(after.num_host_free - before.num_host_free, 2);
  assert.equal(after['allocations.current'], before['allocations.current'] - 2);
});

test('the CUBIN, PTX and fatbin fixtures: each is what it claims, and loads (a GPU) or is refused by name (the fake)', () => {
  const dir = new URL('../fixtures/kernels/', import.meta.url);
  const cubin = readFileSync(new URL('kernels.sm_90.cubin', dir));
  const ptx = readFileSync(new URL('kernels.compute_90.ptx', dir));
  const fatbin = readFileSync(new URL('kernels.fatbin', dir));
  assert.deepEqual([...cubin.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46]);  // ELF
  assert.deepEqual([...fatbin.subarray(0, 4)], [0x50, 0xed, 0x55, 0xba]);  // 0xba55ed50
  assert.match(ptx.toString('utf8', 0, 400), /\.version \d+\.\d+[\s\S]*\.target sm_90/);
  for (const image of [cubin, ptx, fatbin, ptx.toString('utf8')]) {
    if (fake) {
      assert.throws(() => compute.Module.load(image), (e) => e.code === 'ERR_CCA_INVALID_MODULE' && /CUDA_ERROR_INVALID_IMAGE/.test(e.message));
      continue;
    }
    const m = compute.Module.load(image);
    const saxpy = m.getKernel('saxpy', ['f32', 'ptr', 'ptr', 'u32']);
    const x = cuda.alloc(1024 * 4).copyFrom(new Float32Array(1024).fill(1));
    const y = cuda.alloc(1024 * 4).copyFrom(new Float32Array(1024).fill(2));
    saxpy.launch(grid(1024), 3, x, y, 1024);
    assert.equal(y.copyTo(new Float32Array(1))[0], 5);
    x.free();
    y.free();
    m.unload();
  }
});

test('dynamic shared memory above 48 KiB after setMaxDynamicSharedMemory, and not beyond it', () => {
  const limits = compute.launchLimits();
  const b = cuda.alloc(4);
  const bytes = 96 * 1024;
  assert.throws(() => k.fill32.launch({ grid: 1, block: 1, sharedMem: bytes }, b, 0, 1), { code: 'ERR_CCA_LAUNCH_CONFIG' });
  k.fill32.setMaxDynamicSharedMemory(bytes);
  assert.equal(k.fill32.attributes.maxDynamicSharedSizeBytes, bytes);
  k.fill32.launch({ grid: 1, block: 1, sharedMem: bytes }, b, 7, 1);
  assert.equal(b.copyTo(new Uint32Array(1))[0], 7);
  assert.throws(() => k.fill32.launch({ grid: 1, block: 1, sharedMem: bytes + 1 }, b, 0, 1), { code: 'ERR_CCA_LAUNCH_CONFIG' });
  assert.throws(() => k.fill32.setMaxDynamicSharedMemory(limits.maxSharedPerBlockOptin + 1), { code: 'ERR_CCA_LAUNCH_CONFIG' });
  b.free();
});

test('a launch with buffers of two streams needs a stream', () => {
  const a = cuda.Stream.create();
  const x = cuda.alloc(64, { stream: a });
  const y = cuda.alloc(64);
  assert.throws(() => k.saxpy.launch({ grid: 1, block: 16 }, 1, x, y, 16), { code: 'ERR_CCA_LAUNCH_STREAM' });
  x.free();
  y.free();
});

test('events: timing, query, done', async () => {
  const s = cuda.Stream.create();
  const start = new compute.Event({ timing: true }).record(s);
  const n = 1 << 20;
  const b = cuda.alloc(n * 4, { stream: s });
  for (let i = 0; i < 20; i++) k.fill32.launch(grid(n), b, i, n);
  const end = new compute.Event({ timing: true }).record(s);
  await end.done();
  assert.equal(end.query(), true);
  const ms = start.elapsedTime(end);
  assert.ok(ms >= 0 && ms < 10_000, `elapsed ${ms} ms`);
  assert.throws(() => start.elapsedTime(new compute.Event().record(s)), { code: 'ERR_CCA_EVENT_NOT_TIMED' });
  b.free();
});

test('launch limits are checked before the driver sees them', () => {
  const limits = compute.launchLimits();
  assert.ok(limits.maxThreadsPerBlock >= 1024);
  const b = cuda.alloc(4);
  assert.throws(() => k.fill32.launch({ grid: 1, block: limits.maxThreadsPerBlock + 1 }, b, 0, 1),
    { code: 'ERR_CCA_LAUNCH_CONFIG' });
  assert.throws(() => k.fill32.launch({ grid: 1, block: 1, sharedMem: 1 << 20 }, b, 0, 1),
    { code: 'ERR_CCA_LAUNCH_CONFIG' });
  b.free();
});

test('NVRTC: compile, load, launch (where NVRTC is found)', async () => {
  const info = compute.compilerInfo();
  if (!info.available) {
    console.log(`     (skipped: ${info.reason.slice(0, 120)}...)`);
    return;
  }
  const source = fake
    ? 'template <class T> __global__ void fill(T* p, T v, unsigned n);\n'
    : `template <class T> __global__ void fill(T* p, T v, unsigned n) {
         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
         if (i < n) p[i] = v * SCALE;
       }\n`;
  console.log(`     (NVRTC ${info.version} at ${info.path})`);
  const program = await compute.compile(source, { nameExpressions: ['fill<unsigned int>'], defines: { SCALE: 3 } });
  assert.equal(program.target, 'cubin');
  const m = program.load();
  const fill = m.getKernel('fill<unsigned int>', ['ptr', 'u32', 'u32']);
  const b = cuda.alloc(256 * 4);
  fill.launch({ grid: 1, block: 256 }, b, 5, 256);
  assert.equal(b.copyTo(new Uint32Array(256))[255], fake ? 5 : 15);
  await assert.rejects(compute.compile('#error this does not compile\n', { name: 'broken.cu' }),
    (e) => e.code === 'ERR_CCA_COMPILE' && e.log.length > 0);
  b.free();
  m.unload();
});

test('a kernel fault is sticky and says so (own process)', () => {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), 'fault'], { encoding: 'utf8' });
  assert.match(out, /fault: sticky, ERR_CCA_DEVICE_FAULT/);
});

await runCases(cases, memory);
