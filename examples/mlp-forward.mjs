// An MLP's forward pass over a stream of input batches, as an inference service in Node
// would run it: weights resident on the GPU, inputs staged through pinned host memory and
// copied on a stream of their own while the previous batch computes, three linear layers
// (one cuBLASLt call each where cuBLAS is found: the product, with the bias and relu in its
// epilogue; else one hand-written kernel each, compiled at start with NVRTC), logits copied
// back asynchronously. It checks
// the first batch against a CPU reference, prints throughput and the allocator's view,
// and dumps a snapshot that memory_viz opens (weights, inputs and activations tagged).
//
//   node examples/mlp-forward.mjs [batches] [snapshot.pickle]
//
// Needs the cuda backend, and cuBLAS or NVRTC (in the test suite: our fake driver, fake cuBLAS
// and fake NVRTC).
// In your project, import from 'cuda-caching-allocator' instead of '../dist/index.js'.
import { compute, cuda, memory } from '../dist/index.js';
import { linearKernel } from './linear-layer.mjs';
import { requireCuda } from './requirements.mjs';

const LAYERS = [784, 512, 256, 10];
const BATCH = 256;
const batches = Number(process.argv[2] ?? 20);
const snapshotPath = process.argv[3] ?? 'mlp-forward.pickle';

// cuBLASLt for each layer where cuBLAS is here; a kernel of our own (NVRTC) elsewhere.
const blas = compute.blasInfo();
const fused = blas.available && blas.ltAvailable;
requireCuda('mlp-forward', { nvrtc: !fused });
const linear = fused ? null : await linearKernel('mlp.cu');
console.log(fused ? `layers: cuBLAS ${blas.version}, one cuBLASLt call each (the bias and relu in its epilogue)`
  : `layers: one hand-written kernel each (${(blas.available ? blas.ltReason : blas.reason).split(':')[0]})`);

memory._record_memory_history({ enabled: 'all', context: 'alloc', maxEntries: 100_000 });

// Deterministic weights (a small LCG), uploaded once.
let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5) * 0.1;
const weights = [];
for (let l = 0; l + 1 < LAYERS.length; l++) {
  const w = new Float32Array(LAYERS[l] * LAYERS[l + 1]).map(random);
  const b = new Float32Array(LAYERS[l + 1]).map(random);
  weights.push({
    w: cuda.alloc(w.byteLength, { tag: `weights.${l}` }).copyFrom(w), wHost: w,
    b: cuda.alloc(b.byteLength, { tag: `bias.${l}` }).copyFrom(b), bHost: b,
  });
}

const copies = cuda.Stream.create();
const work = cuda.Stream.create();
const inBytes = BATCH * LAYERS[0] * 4;
const outBytes = BATCH * LAYERS.at(-1) * 4;
const slots = [0, 1].map(() => ({
  input: cuda.allocHost(inBytes),
  logits: cuda.allocHost(outBytes),
  done: Promise.resolve(),
}));
const fillInput = (host, batch) => {
  const x = new Float32Array(host.array.buffer, 0, BATCH * LAYERS[0]);
  for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.001 + batch);
  return x;
};

function forward(slot) {
  // Stage the batch on the copy stream; the work stream waits for it, not for the host.
  const x = cuda.alloc(inBytes, { stream: copies, tag: 'input' }).copyFromAsync(slot.input);
  work.waitEvent(new compute.Event().record(copies));
  let act = x;
  for (let l = 0; l + 1 < LAYERS.length; l++) {
    const [inn, out] = [LAYERS[l], LAYERS[l + 1]];
    const y = cuda.alloc(BATCH * out * 4, { stream: work, tag: `activations.${l}` });
    const relu = l + 2 < LAYERS.length;
    if (linear) {
      linear.launch({ grid: [Math.ceil(out / 128), BATCH], block: 128, stream: work },
        act, weights[l].w, weights[l].b, y, BATCH, inn, out, relu ? 1 : 0);
    } else {
      // y = relu(act @ w + b), one call.
      compute.matmul(act, weights[l].w, y, { m: BATCH, n: out, k: inn, bias: weights[l].b, epilogue: relu ? 'relu' : 'none', stream: work });
    }
    act.free();  // recorded on `work` by the launch: reused only after it ran
    act = y;
  }
  act.copyToAsync(slot.logits);
  act.free();
  return work.done();
}

function reference(x) {
  let a = x;
  for (let l = 0; l + 1 < LAYERS.length; l++) {
    const [inn, out] = [LAYERS[l], LAYERS[l + 1]];
    const y = new Float32Array(BATCH * out);
    for (let r = 0; r < BATCH; r++) {
      for (let o = 0; o < out; o++) {
        let acc = weights[l].bHost[o];
        for (let i = 0; i < inn; i++) acc += a[r * inn + i] * weights[l].wHost[i * out + o];
        y[r * out + o] = l + 2 < LAYERS.length && acc < 0 ? 0 : acc;
      }
    }
    a = y;
  }
  return a;
}

const t0 = performance.now();
let firstInput;
let maxError = 0;
for (let batch = 0; batch < batches; batch++) {
  const slot = slots[batch % 2];
  await slot.done;  // its pinned buffers are free again once its last batch finished
  const x = fillInput(slot.input, batch);
  if (batch === 0) firstInput = Float32Array.from(x);
  slot.done = forward(slot);
  if (batch === 0) {
    await slot.done;
    const got = new Float32Array(slot.logits.array.buffer, 0, BATCH * LAYERS.at(-1));
    const want = reference(firstInput);
    for (let i = 0; i < want.length; i++) maxError = Math.max(maxError, Math.abs(got[i] - want[i]));
  }
}
await Promise.all(slots.map((s) => s.done));
const seconds = (performance.now() - t0) / 1000;

console.log(`${cuda.deviceName()}: ${batches} batches of ${BATCH} through ${LAYERS.join(' -> ')} in ${seconds.toFixed(3)} s ` +
  `(${(batches * BATCH / seconds).toFixed(0)} samples/s)`);
console.log(`first batch against the CPU reference: max |error| ${maxError.toExponential(2)} ${maxError < 1e-3 ? 'ok' : 'MISMATCH'}`);
const stats = memory.memory_stats();
console.log(`device: ${stats['allocation.all.allocated']} allocations served by ${stats.num_device_alloc} device mallocs; ` +
  `peak allocated ${(stats['allocated_bytes.all.peak'] / 2 ** 20).toFixed(1)} MiB, reserved ${(memory.memory_reserved() / 2 ** 20).toFixed(1)} MiB`);
const host = memory.host_memory_stats();
console.log(`pinned: ${host['allocations.current']} blocks, ${(host['allocated_bytes.current'] / 2 ** 20).toFixed(2)} MiB, ${host.num_host_alloc} host allocs`);
await memory._dump_snapshot(snapshotPath);
console.log(`snapshot: ${snapshotPath}`);
process.exitCode = maxError < 1e-3 ? 0 : 1;
