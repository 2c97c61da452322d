// The package as a user gets it: `npm pack` with the prebuild prepack makes, then the
// tarball installed into an empty project with no network (`npm ci --offline`, the
// dependencies from npm's cache by a lockfile built from ours), and used there: an ESM
// import, a CommonJS require, TypeScript under --strict --module nodenext, `npx cca
// --version` and `npx cca demo`. Once on the prebuild with no compiler on PATH, once built
// from source by `npm rebuild`, once installed and run as arm64 (npm and Node for arm64 under
// qemu) on the arm64 prebuild.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';
import { wasmBuilt } from '../support/replay.js';
import { NodeDistError, fetchNode, pinnedVersion } from '../../scripts/node-dist.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = tempDir('cca-package-');
// npm's own bin folder holds npm-cli.js and npx-cli.js.
const NPM_BIN = dirname(realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim()));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

/** The environment without the npm_* variables of the npm running these tests. */
function cleanEnv(path: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith('npm_')) env[k] = v;
  env.PATH = path;
  return env;
}

/** A PATH with node and sh only: no cmake, no compiler. */
function bareBin(): string {
  const bin = join(work, 'bare-bin');
  mkdirSync(bin, { recursive: true });
  for (const tool of ['node', 'sh']) {
    const at = join(bin, tool);
    if (!existsSync(at)) symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), at);
  }
  return bin;
}

function npm(args: string[], cwd: string, path: string): string {
  return execFileSync(process.execPath, [join(NPM_BIN, 'npm-cli.js'), ...args], { cwd, env: cleanEnv(path), encoding: 'utf8', stdio: 'pipe' });
}

let tarball = '';

const ARM64_SYSROOT = '/usr/aarch64-linux-gnu';
/** qemu-aarch64's path ('' when it or the arm64 sysroot is missing). */
const QEMU = (() => {
  try {
    const path = execFileSync('sh', ['-c', 'command -v qemu-aarch64'], { encoding: 'utf8' }).trim();
    return path && existsSync(join(ARM64_SYSROOT, 'lib', 'ld-linux-aarch64.so.1')) ? path : '';
  } catch {
    return '';
  }
})();
if (!QEMU) console.warn('package.test: qemu-aarch64 or the arm64 sysroot (Debian: qemu-user, libc6-arm64-cross) is missing; the arm64 test skips');

/**
 * Node for linux-arm64 at the version pinned for this Node's line (scripts/node-pins.json:
 * published for arm64 as well as x64, unlike the newest x64 release on some days), cached.
 * A registry that does not answer skips the test, naming the version; a pin the registry
 * does not have, or a line with no pin, fails it.
 */
function arm64Node(skip: (why: string) => never): string {
  try {
    return fetchNode('arm64', pinnedVersion(process.versions.node), {
      npm: [process.execPath, join(NPM_BIN, 'npm-cli.js')], env: cleanEnv(process.env.PATH!),
    });
  } catch (e) {
    if (e instanceof NodeDistError && e.unreachable) {
      console.warn(`package.test: the arm64 test skips: ${e.message}`);
      return skip(e.message);
    }
    throw e;
  }
}

/** An empty project whose lockfile names the tarball (default: the packed one) and our production dependencies. */
function consumer(name: string, from = tarball): string {
  const dir = join(work, name);
  mkdirSync(dir);
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  const integrity = `sha512-${createHash('sha512').update(readFileSync(from)).digest('base64')}`;
  const spec = `file:${from}`;
  const packages: Record<string, unknown> = {
    '': { name, version: '1.0.0', dependencies: { 'cuda-caching-allocator': spec } },
    'node_modules/cuda-caching-allocator': {
      version: pkg.version, resolved: spec, integrity, hasInstallScript: true, license: pkg.license,
      dependencies: pkg.dependencies, bin: pkg.bin, engines: pkg.engines,
    },
  };
  for (const [k, v] of Object.entries(lock.packages as Record<string, { dev?: boolean }>)) {
    if (k.startsWith('node_modules/') && !v.dev) packages[k] = v;
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, dependencies: { 'cuda-caching-allocator': spec } }));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name, version: '1.0.0', lockfileVersion: 3, requires: true, packages }));
  writeFileSync(join(dir, 'esm.mjs'), `import { cuda, memory } from 'cuda-caching-allocator';
const b = cuda.alloc(1 << 20);
console.log(JSON.stringify({ allocated: memory.memory_allocated(), simulated: cuda.isSimulated() }));
b.free();
`);
  writeFileSync(join(dir, 'cjs.cjs'), `const { cuda, memory } = require('cuda-caching-allocator');
const b = cuda.alloc(4096);
console.log(JSON.stringify({ allocated: memory.memory_allocated() }));
b.free();
`);
  writeFileSync(join(dir, 'use.cts'), `import cca = require('cuda-caching-allocator');
const b: cca.DeviceBuffer = cca.cuda.alloc(4096);
const stats: Record<string, number> = cca.memory.memory_stats();
b.free();
console.log(stats['allocation.all.current']);
`);
  writeFileSync(join(dir, 'use.mts'), `import { cuda, memory, analysis, type Snapshot } from 'cuda-caching-allocator';
const snap: Snapshot = memory._snapshot({ includeTraces: false });
const frag: analysis.FragmentationReport[] = analysis.fragmentation(snap);
cuda.alloc(16).free();
console.log(frag.length);
`);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true,
      types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')],
    },
    files: ['use.cts', 'use.mts'],
  }));
  return dir;
}

function useIt(dir: string, path: string): void {
  const run = (args: string[]) => execFileSync(process.execPath, args, { cwd: dir, env: cleanEnv(path), encoding: 'utf8' });
  expect(JSON.parse(run(['esm.mjs']))).toEqual({ allocated: 1 << 20, simulated: true });
  expect(JSON.parse(run(['cjs.cjs']))).toEqual({ allocated: 4096 });
  execFileSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', dir], { encoding: 'utf8' });
  const npx = (args: string[]) => execFileSync(process.execPath, [join(NPM_BIN, 'npx-cli.js'), '--offline', ...args], {
    cwd: dir, env: cleanEnv(path), encoding: 'utf8',
  });
  expect(npx(['cca', '--version']).trim()).toBe(pkg.version);
  expect(npx(['cca', 'demo', '-n', '1'])).toMatch(/simulated GPU/i);
}

describe('the packed package in an empty project, offline', () => {
  beforeAll(() => {
    // prepack's steps, less `build:ts`: other test files read dist/ while this runs, and tsc
    // rewrites it in place. npm test built dist/ and the wasm engine already; the wasm and
    // prebuild steps are incremental (no-ops then).
    expect(pkg.scripts.prepack).toBe('npm run build:ts && CCA_REQUIRE_WASM=1 npm run build:wasm && node scripts/prebuild.mjs');
    if (wasmBuilt) execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-wasm.mjs')], { cwd: ROOT, stdio: 'pipe' });
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'prebuild.mjs')], { cwd: ROOT, stdio: 'pipe' });
    const out = execFileSync(process.execPath, [join(NPM_BIN, 'npm-cli.js'), 'pack', '--ignore-scripts', '--pack-destination', work], {
      cwd: ROOT, env: cleanEnv(process.env.PATH!), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    });
    tarball = join(work, out.trim().split('\n').pop()!);
  });

  it.skipIf(!wasmBuilt)('carries the wasm replay engine, one file', () => {
    const list = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    expect(list.filter((f) => f.startsWith('package/dist/wasm/'))).toEqual(['package/dist/wasm/cca-engine.cjs']);
  });

  it('carries the linux-x64 and linux-arm64 prebuilds, stripped and named by prebuildify', () => {
    const list = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    const prebuilds = list.filter((f) => f.startsWith('package/prebuilds/')).sort();
    expect(prebuilds).toEqual(['arm64', 'x64'].map((a) => `package/prebuilds/linux-${a}/cuda-caching-allocator.glibc.node`));
    for (const [arch, machine] of [['x64', 'X86-64'], ['arm64', 'AArch64']]) {
      const file = join(ROOT, 'prebuilds', `linux-${arch}`, 'cuda-caching-allocator.glibc.node');
      const header = execFileSync('readelf', ['-h', file], { encoding: 'utf8' });
      expect(header).toContain(machine);
      expect(execFileSync('readelf', ['-S', file], { encoding: 'utf8' })).not.toContain('.symtab');  // stripped
      // The oldest glibc each needs (README, Install): no symbol version above 2.34.
      const versions = [...execFileSync('objdump', ['-T', file], { encoding: 'utf8' }).matchAll(/GLIBC_2\.(\d+)/g)].map((m) => Number(m[1]));
      expect(Math.max(...versions)).toBeLessThanOrEqual(34);
    }
    expect(list).toContain('package/CHANGELOG.md');
    expect(list.some((f) => f.startsWith('package/lib/') || f.startsWith('package/test/'))).toBe(false);
  });

  it('works on the prebuild with no compiler and no cmake on PATH', () => {
    const dir = consumer('with-prebuild');
    const bare = bareBin();
    npm(['ci', '--offline', '--no-audit', '--no-fund'], dir, bare);
    useIt(dir, bare);
    const resolved = execFileSync(process.execPath, ['-e', "console.log(require('node-gyp-build').resolve('node_modules/cuda-caching-allocator'))"],
      { cwd: dir, encoding: 'utf8' }).trim();
    expect(resolved).toMatch(/prebuilds\/linux-x64\/cuda-caching-allocator\.glibc\.node$/);
  });

  // A laptop with no prebuild for its platform and no compiler (issue 40): the tarball without
  // its prebuilds, installed with only node and sh on PATH. The install succeeds with one line;
  // cca reads PyTorch's real file; the live API says what is missing, from ESM and CommonJS.
  it('installs without prebuilds and without a compiler: the snapshot tools work, the live API throws a code', () => {
    const unpacked = join(work, 'no-prebuilds');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', tarball, '-C', unpacked]);
    rmSync(join(unpacked, 'package', 'prebuilds'), { recursive: true, force: true });
    const stripped = join(work, 'no-prebuilds.tgz');
    execFileSync('tar', ['-czf', stripped, '-C', unpacked, 'package']);
    const dir = consumer('without-prebuilds', stripped);
    const bare = bareBin();
    const installed = npm(['ci', '--offline', '--no-audit', '--no-fund', '--foreground-scripts'], dir, bare);
    expect(installed).toMatch(/cuda-caching-allocator: installed without the native addon \(no prebuild loads on linux-x64.*the snapshot tools work/);
    const npx = (args: string[]) => execFileSync(process.execPath, [join(NPM_BIN, 'npx-cli.js'), '--offline', ...args], {
      cwd: dir, env: cleanEnv(bare), encoding: 'utf8',
    });
    const fixture = join(ROOT, 'test', 'fixtures', 'pytorch-h100-streams.pickle');
    expect(npx(['cca', 'summary', fixture])).toMatch(/history: 1494 entries/);
    npx(['cca', 'viz', fixture, '-o', join(dir, 'v.html')]);
    expect(readFileSync(join(dir, 'v.html'), 'utf8')).toMatch(/^<!doctype html>/i);
    npx(['cca', 'convert', fixture, join(dir, 'x.json')]);
    expect(JSON.parse(readFileSync(join(dir, 'x.json'), 'utf8')).device_traces[0]).toHaveLength(1494);
    if (wasmBuilt) {
      // Replay and what-if on the wasm engine the tarball carries.
      expect(npx(['cca', 'replay', fixture])).toMatch(/1494 entries replayed .*\(wasm engine\)/);
      expect(JSON.parse(npx(['cca', 'replay', fixture, '--what-if', '--json']))).toMatchObject({ engine: 'wasm', rows: expect.any(Array) });
    }
    const run = (file: string) => execFileSync(process.execPath, [file], { cwd: dir, env: cleanEnv(bare), encoding: 'utf8', stdio: 'pipe' });
    for (const file of ['esm.mjs', 'cjs.cjs']) {
      let error = '';
      try {
        run(file);
      } catch (e) {
        error = String((e as { stderr?: string }).stderr);
      }
      expect(error).toMatch(/ERR_CCA_NATIVE_UNAVAILABLE|native addon could not be loaded/);
    }
  });

  // GH200/GB200 nodes run Linux on arm64: Node for arm64 from the registry, run by qemu-user
  // with Debian's arm64 libraries, loads the arm64 prebuild from the same installed project.
  it.skipIf(!QEMU)('installs on arm64 with no compiler on PATH, loads the arm64 prebuild and runs the demo, under qemu', (ctx) => {
    const arm64 = arm64Node((why) => ctx.skip(why));
    const dir = consumer('on-arm64');
    // A PATH whose `node` is Node for arm64 under qemu, beside sh: npm itself, and the
    // install script it runs, run as arm64.
    const bin = join(work, 'arm64-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'node'), `#!/bin/sh\nexec ${QEMU} ${arm64} "$@"\n`, { mode: 0o755 });
    symlinkSync(execFileSync('sh', ['-c', 'command -v sh'], { encoding: 'utf8' }).trim(), join(bin, 'sh'));
    const env = { ...cleanEnv(bin), QEMU_LD_PREFIX: ARM64_SYSROOT };
    const node = join(bin, 'node');
    const installed = execFileSync(node, [join(NPM_BIN, 'npm-cli.js'), 'ci', '--offline', '--no-audit', '--no-fund', '--foreground-scripts'],
      { cwd: dir, env, encoding: 'utf8', stdio: 'pipe' });
    expect(installed).toContain('cuda-caching-allocator: using prebuilds/linux-arm64/cuda-caching-allocator.glibc.node (no build needed)');
    const run = (args: string[]) => execFileSync(node, args, { cwd: dir, env, encoding: 'utf8' });
    expect(run(['-p', 'process.arch']).trim()).toBe('arm64');
    expect(run(['-p', "require('node-gyp-build').resolve('node_modules/cuda-caching-allocator')"]).trim())
      .toMatch(/prebuilds\/linux-arm64\/cuda-caching-allocator\.glibc\.node$/);
    expect(JSON.parse(run(['esm.mjs']))).toEqual({ allocated: 1 << 20, simulated: true });
    expect(run([join('node_modules', 'cuda-caching-allocator', 'dist', 'cli', 'main.js'), 'demo', '-n', '1'])).toMatch(/simulated GPU/i);
  });

  it('builds from source on npm rebuild, and uses that build', () => {
    const dir = consumer('from-source');
    npm(['ci', '--offline', '--no-audit', '--no-fund'], dir, process.env.PATH!);
    npm(['rebuild', 'cuda-caching-allocator', '--offline', '--foreground-scripts'], dir, process.env.PATH!);
    const built = join(dir, 'node_modules', 'cuda-caching-allocator', 'build', 'Release', 'cuda_caching_allocator.node');
    expect(existsSync(built)).toBe(true);
    useIt(dir, process.env.PATH!);
  });
});
