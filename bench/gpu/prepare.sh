#!/usr/bin/env bash
# Run here (the development machine) before using a GPU machine: it builds everything the
# GPU run needs and packs what the device tool must carry: .gpu (Node binary and the
# runtime node_modules), build, build-tests, dist (about 60 MiB in all).
set -euo pipefail
cd "$(dirname "$0")/../.."
../shared/tools/gpu-node
npm run build
node scripts/native-tests.mjs
rm -rf .gpu/runtime && mkdir -p .gpu/runtime
cp package.json package-lock.json .gpu/runtime/
(cd .gpu/runtime && npm ci --omit=dev --ignore-scripts --silent)
du -sh .gpu build build-tests dist
echo 'carry: [".gpu", "build", "build-tests", "dist"]; command: bash bench/gpu/run-on-gpu.sh'
