#!/usr/bin/env bash
# Runs on the GPU machine (it has CUDA, nvidia-smi and python3 with PyTorch, but no Node):
# the conformance suites on the real driver, the demo, our benchmarks and PyTorch's, side
# by side. Prepare with bench/gpu/prepare.sh here, carry .gpu, build, build-tests and dist.
# Results go to $OUT (or ./gpu-results).
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
tar xzf .gpu/node.tgz -C /tmp && export PATH=/tmp/package/bin:$PATH
[ -d node_modules ] || cp -r .gpu/runtime/node_modules node_modules  # the runtime dependencies only
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  node --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} > "$out/machine.txt" 2>&1
CCA_CONFORMANCE_DRIVER=libcuda.so.1 ./build-tests/cca_core_tests conformance_real_gpu > "$out/conformance.txt" 2>&1
CCA_DEVICE=cuda node test/conformance/js-backend.mjs > "$out/js_conformance.txt" 2>&1
CCA_DEVICE=cuda node dist/cli/main.js demo > "$out/demo.txt" 2>&1
./build-tests/cca_gpu_bench > "$out/gpu_bench.txt" 2>&1
CCA_DEVICE=cuda node bench/js-alloc-free.mjs > "$out/js_alloc_free.txt" 2>&1
CCA_DEVICE=cuda node bench/js-snapshot.mjs > "$out/js_snapshot.txt" 2>&1
python3 bench/gpu/pytorch_compare.py > "$out/pytorch.json" 2> "$out/pytorch.err"
tail -n +1 "$out"/*.txt "$out"/pytorch.json
