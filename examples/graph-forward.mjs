// A deep MLP's forward pass (24 linear layers: 24 calls per forward, each one cuBLASLt GEMM
// with the bias and relu in its epilogue where cuBLAS is found, else one kernel of ours),
// run eagerly and as one CUDA graph. The graph is captured once with compute.captureGraph;
// each forward is then one graph.launch(). It checks that the graph computes what the eager
// calls compute, then prints the CPU time per forward and the forwards per second of each.
//
//   node examples/graph-forward.mjs [forwards] [--kernel]   (--kernel: our kernel even with cuBLAS)
//
// Needs the cuda backend, and cuBLAS or NVRTC (in the test suite: our fake driver, fake cuBLAS
// and fake NVRTC); elsewhere it prints one line saying so and exits.
// bench/gpu/pytorch_graph_forward.py runs the same network in PyTorch, eager and under
// torch.cuda.graph.
// In your project, import from 'cuda-caching-allocator' instead of '../dist/index.js'.
import { compute, cuda, memory } from '../dist/index.js';
import { linearKernel } from './linear-layer.mjs';
import { requireCuda } from './requirements.mjs';

const LAYERS = 24;
const WIDTH = 256;
const BATCH = 64;
const forwards = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 200);

const blas = compute.blasInfo();
const fused = blas.available && blas.ltAvailable && !process.argv.includes('--kernel');
requireCuda('graph-forward', { nvrtc: !fused });
const linear = fused ? null : await linearKernel('graph-forward.cu');

const stream = cuda.Stream.create();
let seed = 7;
const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5) * 0.1;
const layers = [];
for (let l = 0; l < LAYERS; l++) {
  layers.push({
    w: cuda.alloc(WIDTH * WIDTH * 4, { stream, tag: `weights.${l}` }).copyFrom(new Float32Array(WIDTH * WIDTH).map(random)),
    b: cuda.alloc(WIDTH * 4, { stream, tag: `bias.${l}` }).copyFrom(new Float32Array(WIDTH).map(random)),
  });
}
const input = cuda.alloc(BATCH * WIDTH * 4, { stream, tag: 'input' }).copyFrom(new Float32Array(BATCH * WIDTH).map(random));
const output = cuda.alloc(BATCH * WIDTH * 4, { stream, tag: 'output' });
const launch = { grid: [WIDTH / 128, BATCH], block: 128, stream };

// One forward: activations from the allocator (inside a capture, from the graph's pool),
// each freed once the next layer has read it.
function forward() {
  let x = input;
  for (let l = 0; l < LAYERS; l++) {
    const last = l === LAYERS - 1;
    const y = last ? output : cuda.alloc(BATCH * WIDTH * 4, { stream });
    if (linear) {
      linear.launch(launch, x, layers[l].w, layers[l].b, y, BATCH, WIDTH, WIDTH, last ? 0 : 1);
    } else {
      compute.matmul(x, layers[l].w, y, { m: BATCH, n: WIDTH, k: WIDTH, bias: layers[l].b, epilogue: last ? 'none' : 'relu', stream });
    }
    if (x !== input) x.free();
    x = y;
  }
}

forward();
const eager = output.copyTo(new Float32Array(BATCH * WIDTH));
const graph = compute.captureGraph(stream, forward);
output.fill(0);
graph.launch();
const replayed = output.copyTo(new Float32Array(BATCH * WIDTH));
const same = eager.every((v, i) => v === replayed[i]);
if (!same) {
  console.error('graph-forward: the graph computed something else than the eager launches');
  process.exit(1);
}

function time(run) {
  for (let i = 0; i < Math.min(10, forwards); i++) run();  // warm
  stream.synchronize();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < forwards; i++) run();
  const issued = process.hrtime.bigint();
  stream.synchronize();
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  return {
    issueUsPerForward: Number(issued - t0) / 1e3 / forwards,
    cpuUsPerForward: (cpu.user + cpu.system) / forwards,
    forwardsPerSecond: forwards / (Number(t1 - t0) / 1e9),
  };
}
const eagerTimes = time(forward);
const graphTimes = time(() => graph.launch());
const result = {
  layers: LAYERS, layer: linear ? 'kernel' : 'cuBLASLt', callsPerForward: LAYERS, nodes: graph.nodes, batch: BATCH, width: WIDTH, forwards,
  same, eager: eagerTimes, graph: graphTimes,
  issueRatio: eagerTimes.issueUsPerForward / graphTimes.issueUsPerForward,
  graphPoolReservedBytes: memory.memory_stats()[`reserved_bytes_by_private_pools.${graph.pool.join('_')}.all.current`],
};
console.log(`graph-forward: ${LAYERS} ${linear ? 'kernels' : 'cuBLASLt GEMMs'} per forward; eager ${eagerTimes.issueUsPerForward.toFixed(1)} us to issue one ` +
  `(${eagerTimes.forwardsPerSecond.toFixed(0)}/s), graph ${graphTimes.issueUsPerForward.toFixed(1)} us ` +
  `(${graphTimes.forwardsPerSecond.toFixed(0)}/s): ${result.issueRatio.toFixed(1)}x cheaper to issue`);
console.log(JSON.stringify(result));
graph.destroy();
for (const { w, b } of layers) {
  w.free();
  b.free();
}
input.free();
output.free();
