#!/usr/bin/env bash
# Run here (the development machine) before using a GPU machine: it builds everything the
# GPU run needs and packs what the device tool must carry: .gpu (Node binary and the
# runtime node_modules), build, build-tests, dist (about 60 MiB in all).
set -euo pipefail
cd "$(dirname "$0")/../.."
../shared/tools/gpu-node
npm run build
node scripts/native-tests.mjs
cmake --build build-tests -j 2 --target cca_gpu_bench cca_launch_bench cca_copy_bench cca_interop_bench
rm -rf .gpu/runtime && mkdir -p .gpu/runtime
cp package.json package-lock.json .gpu/runtime/
(cd .gpu/runtime && npm ci --omit=dev --ignore-scripts --silent)
du -sh .gpu build/Release build-tests/cca_core_tests build-tests/cca_gpu_bench build-tests/cca_launch_bench build-tests/cca_copy_bench build-tests/cca_interop_bench dist
echo 'carry: [".gpu", "build/Release", "build-tests/cca_core_tests", "build-tests/cca_gpu_bench", "build-tests/cca_launch_bench", "build-tests/cca_copy_bench", "build-tests/cca_interop_bench", "dist"]; command: bash bench/gpu/run-on-gpu.sh'
