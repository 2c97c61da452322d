// Makes the package's prebuilds with prebuildify, in its layout and naming:
//   prebuilds/<platform>-<arch>/cuda-caching-allocator.glibc.node
// (no ABI tag: a Node-API binary serves every Node version; a libc tag, so node-gyp-build
// never picks a glibc binary on musl), stripped. prebuildify drives node-gyp, and this addon
// builds with CMake, so it is given scripts/node-gyp-cmake.mjs as its node-gyp: it builds,
// prebuildify names, strips (with the cross `strip` for another architecture) and places.
// On linux-x64 it makes linux-x64 and, cross-compiled, linux-arm64 (GH200/GB200 nodes);
// CCA_PREBUILD_ARCHS=x64 (a comma list) makes only those named. This machine's architecture
// is built in the development build/ (after `npm ci` that compiles nothing) and copied out,
// so build/ keeps its addon; another is built in build-prebuild/. Run by `prepack`, so
// `npm pack` and `npm publish` always carry fresh ones.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CROSS, libcOf } from './platform.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const staging = join(root, 'build-prebuild');
const archs = process.env.CCA_PREBUILD_ARCHS
  ? process.env.CCA_PREBUILD_ARCHS.split(',').map((a) => a.trim()).filter(Boolean)
  : process.platform === 'linux' && process.arch === 'x64' ? ['x64', ...Object.keys(CROSS)] : [process.arch];

const has = (cmd) => {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
for (const arch of archs) {
  if (arch === process.arch) continue;
  const cross = CROSS[arch];
  if (!cross) throw new Error(`prebuild: no cross toolchain is known for ${arch} (known: ${Object.keys(CROSS).join(', ')})`);
  if (!has(`${cross.triple}-g++`)) {
    throw new Error(`prebuild: the ${arch} prebuild needs ${cross.triple}-g++: install Debian's ${cross.packages}, ` +
      `or make only this platform's with CCA_PREBUILD_ARCHS=${process.arch}`);
  }
}

mkdirSync(staging, { recursive: true });
for (const arch of archs) {
  const dir = join(root, 'prebuilds', `${process.platform}-${arch}`);
  rmSync(dir, { recursive: true, force: true });  // one binary per platform: no stale tags
  const strip = arch === process.arch ? 'strip' : `${CROSS[arch].triple}-strip`;
  execFileSync(process.execPath, [join(root, 'node_modules', 'prebuildify', 'bin.js'),
    '--napi', '--tag-libc', '--strip', '--strip-bin', strip, '--arch', arch, '--name', 'cuda-caching-allocator',
    '--node-gyp', join(root, 'scripts', 'node-gyp-cmake.mjs'), '--out', root, staging], { cwd: root, stdio: 'inherit' });
  const files = existsSync(dir) ? readdirSync(dir) : [];
  const expected = `cuda-caching-allocator.${libcOf()}.node`;
  if (files.length !== 1 || files[0] !== expected) throw new Error(`prebuild: expected ${dir}/${expected}, found ${files.join(', ') || 'nothing'}`);
  const target = join(dir, expected);
  console.log(`prebuild: ${target.slice(root.length)} (${(statSync(target).size / 1024).toFixed(0)} KiB, stripped${glibcNeeded(target)})`);
}

// The newest glibc symbol version a binary needs: older systems build from source at install.
function glibcNeeded(file) {
  try {
    const symbols = execFileSync('objdump', ['-T', file], { encoding: 'utf8' });
    const versions = [...symbols.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
    versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    return versions.length ? `, needs glibc >= ${versions.at(-1).join('.')}` : '';
  } catch {
    return '';  // objdump is optional
  }
}
