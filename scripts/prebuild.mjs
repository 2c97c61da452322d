// Makes this platform's prebuild in prebuildify's layout and naming:
//   prebuilds/<platform>-<arch>/cuda-caching-allocator.napi.<glibc|musl>.node
// (a Node-API tag, so one binary serves every Node version; a libc tag, so node-gyp-build
// never picks a glibc binary on musl or the reverse), stripped of debug symbols.
// prebuildify itself only drives node-gyp, and this addon builds with CMake (cmake-js), so
// the layout and tags are produced here from the cmake-js output. Run by `prepack`, so
// `npm pack` and `npm publish` always carry a fresh one.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { libcOf } from './platform.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = join(root, 'build', 'Release', 'cuda_caching_allocator.node');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

run(process.execPath, [join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js'), 'compile', '--out', 'build']);

const dir = join(root, 'prebuilds', `${process.platform}-${process.arch}`);
mkdirSync(dir, { recursive: true });
for (const f of readdirSync(dir)) rmSync(join(dir, f));  // one binary per platform: no stale tags
const target = join(dir, `cuda-caching-allocator.napi.${libcOf()}.node`);
copyFileSync(built, target);
try {
  execFileSync('strip', ['--strip-unneeded', target], { stdio: 'pipe' });
} catch (e) {
  console.warn(`prebuild: strip failed (${e.message.split('\n')[0]}); the prebuild keeps its symbols`);
}
// The newest glibc symbol version it needs: older systems build from source at install.
let needs = '';
try {
  const symbols = execFileSync('objdump', ['-T', target], { encoding: 'utf8' });
  const versions = [...symbols.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (versions.length) needs = `, needs glibc >= ${versions.at(-1).join('.')}`;
} catch {
  // objdump is optional
}
if (!existsSync(target)) throw new Error(`prebuild: ${target} was not written`);
console.log(`prebuild: ${target.slice(root.length)} (${(statSync(target).size / 1024).toFixed(0)} KiB, stripped${needs})`);
