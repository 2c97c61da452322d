// What a prebuild must match here, named as node-gyp-build names it: shared by the prebuild
// script, the install script and the addon's load error.
import { existsSync, readFileSync } from 'node:fs';

/** 'glibc' or 'musl' (node-gyp-build's rule: Alpine, or LIBC set, means musl). */
export function libcOf() {
  if (process.env.LIBC) return process.env.LIBC;
  if (process.platform !== 'linux') return 'glibc';
  try {
    if (existsSync('/etc/alpine-release')) return 'musl';
    const report = process.report?.getReport?.();
    return report?.header?.glibcVersionRuntime ? 'glibc' : 'musl';
  } catch {
    return readFileSync('/proc/self/maps', 'utf8').includes('musl') ? 'musl' : 'glibc';
  }
}

/** One line: platform, arch, libc (with its version), Node and Node-API versions. */
export function platformLine() {
  const glibc = process.report?.getReport?.()?.header?.glibcVersionRuntime;
  return `${process.platform}-${process.arch}, ${libcOf()}${glibc ? ` ${glibc}` : ''}, Node ${process.versions.node} ` +
    `(Node-API ${process.versions.napi})`;
}

/** Architectures whose prebuild is cross-compiled on linux-x64, by Node's name: the GNU
 *  triple of their toolchain (cmake/<triple>.cmake) and the Debian packages it comes from. */
export const CROSS = {
  arm64: { triple: 'aarch64-linux-gnu', packages: 'g++-aarch64-linux-gnu libc6-arm64-cross libstdc++6-arm64-cross' },
};

/** The platforms the package ships a prebuild for: scripts/prebuild.mjs makes linux-x64's
 *  and, cross-compiled, one for each architecture above. */
export const PREBUILT = ['x64', ...Object.keys(CROSS)].map((arch) => `linux-${arch} (glibc)`);
