// Copies the built addon to prebuilds/<platform>-<arch>/, where node-gyp-build finds it
// before looking for a local build (Node-API: one binary serves every Node version).
import { copyFileSync, mkdirSync } from 'node:fs';

const dir = `prebuilds/${process.platform}-${process.arch}`;
mkdirSync(dir, { recursive: true });
copyFileSync('build/Release/cuda_caching_allocator.node', `${dir}/cuda-caching-allocator.napi.node`);
console.log(`copied build/Release/cuda_caching_allocator.node to ${dir}/`);
