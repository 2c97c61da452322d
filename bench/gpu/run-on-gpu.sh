#!/usr/bin/env bash
# Runs on the GPU machine (it has CUDA, nvidia-smi and python3 with PyTorch, but no Node):
# the conformance suites on the real driver, the demo, our benchmarks and PyTorch's, side
# by side, and kernels on our buffers. Prepare with bench/gpu/prepare.sh here and carry what
# it names (the Node binary and runtime dependencies, the addon, three test binaries, dist).
# Results go to ./gpu-results, and as one gpu-results.tgz into $OUT when the device tool
# runs it (it brings back at most 8 files). Each step has a time limit of its own, so one
# that hangs cannot take the others' time.
set -uo pipefail
out=gpu-results
rm -rf "$out" && mkdir -p "$out"
tar xzf .gpu/node.tgz -C /tmp && export PATH=/tmp/package/bin:$PATH
[ -d node_modules ] || cp -r .gpu/runtime/node_modules node_modules  # the runtime dependencies only
step() {  # step FILE SECONDS COMMAND...: runs one step, its output and time in FILE
  local file=$1 limit=$2
  # ONLY=regex runs just the steps whose file names match it (a short run for one issue).
  if [ -n "${ONLY:-}" ] && ! [[ "$file" =~ $ONLY ]]; then return; fi
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$out/$file" 2>&1
  echo "[$file: exit $?, $((SECONDS - t0)) s]" | tee -a "$out/$file"
}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  node --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  lscpu | grep -E '^(Model name|CPU\(s\))'
  echo "NVRTC libraries:"; find /usr /opt -name 'libnvrtc.so*' 2>/dev/null | head -8
  python3 -c 'import ctypes; d = ctypes.CDLL("libcuda.so.1"); print("cuFuncGetParamInfo", hasattr(d, "cuFuncGetParamInfo"), "cuLaunchHostFunc", hasattr(d, "cuLaunchHostFunc"))' 
} > "$out/machine.txt" 2>&1
step conformance.txt 120 env CCA_CONFORMANCE_DRIVER=libcuda.so.1 ./build-tests/cca_core_tests conformance_real_gpu
step js_conformance.txt 120 env CCA_DEVICE=cuda node test/conformance/js-backend.mjs
step demo.txt 60 env CCA_DEVICE=cuda node dist/cli/main.js demo
# NVRTC: the library's own search first; where it finds none, the toolkit's copy.
if ! CCA_DEVICE=cuda node -e "import('./dist/index.js').then(m => process.exit(m.compute.compilerInfo().available ? 0 : 1))"; then
  export CCA_NVRTC_PATH=$(find /usr/local /opt -name 'libnvrtc.so.1[23]' 2>/dev/null | head -1)
fi
# cuBLAS: the library's own search first; where it finds none, PyTorch's wheel's copy.
if ! CCA_DEVICE=cuda node -e "import('./dist/index.js').then(m => process.exit(m.compute.blasInfo().available ? 0 : 1))"; then
  export CCA_CUBLAS_PATH=$(python3 -c 'import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print((sorted(glob.glob(d + "/nvidia/*/lib/libcublas.so.1[23]")) + [""])[0])')
fi
step js_kernels.txt 120 env CCA_DEVICE=cuda node test/conformance/js-kernels.mjs
step launch.txt 120 env CCA_DEVICE=cuda node bench/js-launch.mjs
step copy.txt 120 env CCA_DEVICE=cuda node bench/js-copy.mjs
step mlp.txt 120 env CCA_DEVICE=cuda node examples/mlp-forward.mjs 200 "$out/mlp.pickle"
# CUDA graphs: 24 launches per forward, eager against one graph launch, ours and PyTorch's
# (torch.cuda.graph) on the same network; the C++ graph tests run on the fake driver only.
step graph_forward.txt 180 env CCA_DEVICE=cuda node examples/graph-forward.mjs 2000
step graph_forward_kernel.txt 180 env CCA_DEVICE=cuda node examples/graph-forward.mjs 2000 --kernel
step pytorch_graph_forward.txt 180 python3 bench/gpu/pytorch_graph_forward.py 2000
# PyTorch's own memory_viz code reads the example's snapshot and draws it.
step mlp_viz.txt 60 python3 -c "import pickle, sys; from torch.cuda import _memory_viz as v; s = pickle.load(open('$out/mlp.pickle', 'rb')); print('segments', len(s['segments']), 'trace entries', len(s['device_traces'][0])); print('trace_plot html bytes', len(v.trace_plot(s))); print('segment_plot html bytes', len(v.segment_plot(s)))"
# Other native code through the C ABI: a C consumer built here against cca.h (its own stream
# and its own context on the real driver), the example, and the table's pair against C++'s.
step js_interop.txt 180 env CCA_DEVICE=cuda CCA_CONSUMER_DIR="$(mktemp -d)" node test/conformance/js-interop.mjs
# CUDA IPC: this process exports, a forked child maps, reads, writes, runs a kernel, closes.
step js_ipc.txt 180 env CCA_DEVICE=cuda node test/conformance/js-ipc.mjs
step ipc_example.txt 60 env CCA_DEVICE=cuda node examples/ipc-share.mjs
step interop_example.txt 60 env CCA_DEVICE=cuda node examples/interop.mjs
step interop_bench.txt 120 env CCA_DEVICE=cuda ./build-tests/cca_interop_bench
step gpu_bench.txt 120 ./build-tests/cca_gpu_bench
step js_alloc_free.txt 90 env CCA_DEVICE=cuda node bench/js-alloc-free.mjs
step js_snapshot.txt 90 env CCA_DEVICE=cuda node bench/js-snapshot.mjs
step pytorch.txt 90 python3 bench/gpu/pytorch_compare.py
step js_blas.txt 180 env CCA_DEVICE=cuda node test/conformance/js-blas.mjs
step js_gemm.txt 240 env CCA_DEVICE=cuda node bench/js-gemm.mjs 50
step pytorch_gemm.txt 240 python3 bench/gpu/pytorch_gemm.py 50
# examples/mlp-forward.mjs (on cuBLASLt, found above; mlp.txt) against the same MLP in PyTorch eager.
step pytorch_mlp_forward.txt 120 python3 bench/gpu/pytorch_mlp_forward.py 200
# Pinned host memory's history (record_pinned_host_memory): ours on the real driver, read by
# PyTorch's _memory_viz.py (stats and trace, as its command line runs them, and both plots);
# then PyTorch's own where its torch has it (>= 2.14), read by our CLI.
step js_host_history.txt 60 env CCA_DEVICE=cuda node test/conformance/js-host-history.mjs "$out/host-history.pickle"
step host_history_viz.txt 60 bash -c "python3 -m torch.cuda._memory_viz stats '$out/host-history.pickle' && python3 -m torch.cuda._memory_viz trace '$out/host-history.pickle' | tail -5 && python3 -c \"import pickle; from torch.cuda import _memory_viz as v; s = pickle.load(open('$out/host-history.pickle', 'rb')); print('host_segments', len(s['host_segments']), 'host_traces', len(s['host_traces'])); print('trace_plot html bytes', len(v.trace_plot(s))); print('segment_plot html bytes', len(v.segment_plot(s)))\""
step pytorch_pinned_history.txt 60 python3 bench/gpu/pytorch_pinned_history.py "$out/pinned-history.pickle"
step pinned_history_ours.txt 60 bash -c "[ -f '$out/pinned-history.pickle' ] || { echo 'no host history from this torch'; exit 0; }; node dist/cli/main.js summary '$out/pinned-history.pickle' && node dist/cli/main.js trace --host '$out/pinned-history.pickle' && node dist/cli/main.js leaks --host '$out/pinned-history.pickle'"
step pytorch_cpp_pair.txt 240 env CCA_TORCH_EXT_DIR="$(mktemp -d)" python3 bench/gpu/pytorch_cpp_pair.py
[ -n "${OUT:-}" ] && tar czf "$OUT/gpu-results.tgz" "$out"
tail -n +1 "$out"/*.txt
