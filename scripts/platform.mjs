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
