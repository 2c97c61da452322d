#!/usr/bin/env node
// The `node-gyp` prebuildify runs (scripts/prebuild.mjs passes it as --node-gyp): this addon
// builds with CMake through cmake-js, so `node-gyp rebuild --arch=A [--debug|--release]` is
// answered by a cmake-js build of the project for A, left where node-gyp would leave it
// (build/Release/ under the directory prebuildify runs in), where prebuildify finds it, strips
// it and names it. --target and --devdir are node-gyp's headers for one Node version: a
// Node-API addon needs none (cmake-js takes them from node-api-headers). Another architecture
// is cross-compiled with the toolchain file cmake/<triple>.cmake.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CROSS } from './platform.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const fail = (message) => {
  console.error(`node-gyp-cmake: ${message}`);
  process.exit(1);
};
if (args[0] !== 'rebuild') fail(`only 'rebuild' is answered (prebuildify's call), got: ${args.join(' ')}`);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const arch = option('arch') ?? process.arch;
const config = args.includes('--debug') ? 'Debug' : 'Release';
// This machine's architecture builds in the project's own build/ (the development build, so
// after `npm ci` or `npm run build` there is nothing left to compile; the addon is copied
// out, never moved); another, in a folder of its own here.
const out = arch === process.arch ? join(root, 'build') : join(process.cwd(), `build-${arch}`);
const cmakeArgs = ['compile', '--directory', root, '--out', out];
if (config === 'Debug') cmakeArgs.push('--debug');
if (arch !== process.arch) {
  const triple = CROSS[arch]?.triple;
  if (process.platform !== 'linux' || !triple) fail(`cannot cross-compile for ${process.platform}-${arch} (known: ${Object.keys(CROSS).join(', ')})`);
  cmakeArgs.push(`--CDCMAKE_TOOLCHAIN_FILE=${join(root, 'cmake', `${triple}.cmake`)}`);
}
execFileSync(process.execPath, [join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js'), ...cmakeArgs], { stdio: 'inherit' });
const built = join(out, config, 'cuda_caching_allocator.node');
if (!existsSync(built)) fail(`cmake-js left no ${built}`);
const dest = join(process.cwd(), 'build', config);
mkdirSync(dest, { recursive: true });
for (const f of readdirSync(dest)) if (f.endsWith('.node')) rmSync(join(dest, f));  // prebuildify takes the one there
copyFileSync(built, join(dest, 'cuda_caching_allocator.node'));
