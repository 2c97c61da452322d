// scripts/install.mjs decides between the prebuild, a build from source and one clear
// failure. Run here on a copy of the package with no compiler and no cmake on PATH, so no
// case compiles: a prebuild that loads is used; a missing one, or one that does not load
// (what an older glibc or another arch gives), ends with the message naming the machine,
// what was looked for and the two fixes; asking for a source build says so.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILT = join(ROOT, 'build', 'Release', 'cuda_caching_allocator.node');

function bareBin(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const tool of ['node', 'sh']) symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(bin, tool));
  return bin;
}

/** A copy of the package's install-time files, with `prebuild` as its prebuild (or none). */
function packageCopy(prebuild: 'good' | 'broken' | 'none'): { dir: string; bin: string } {
  const root = tempDir('cca-install-');
  const dir = join(root, 'pkg');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  for (const f of ['install.mjs', 'platform.mjs']) copyFileSync(join(ROOT, 'scripts', f), join(dir, 'scripts', f));
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const pre = join(dir, 'prebuilds', `${process.platform}-${process.arch}`);
  mkdirSync(pre, { recursive: true });
  const file = join(pre, 'cuda-caching-allocator.glibc.node');
  if (prebuild === 'good') copyFileSync(BUILT, file);
  if (prebuild === 'broken') writeFileSync(file, 'not an ELF file');
  return { dir, bin: bareBin(root) };
}

function install(dir: string, bin: string, env: Record<string, string> = {}) {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith('npm_')) clean[k] = v;
  return spawnSync(process.execPath, [join(dir, 'scripts', 'install.mjs')], { encoding: 'utf8', env: { ...clean, PATH: bin, ...env } });
}

describe.skipIf(!existsSync(BUILT))('the install script', () => {
  it('uses a prebuild that loads, and builds nothing', () => {
    const { dir, bin } = packageCopy('good');
    const r = install(dir, bin);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/using prebuilds\/linux-x64\/cuda-caching-allocator\.glibc\.node \(no build needed\)/);
    expect(existsSync(join(dir, 'build'))).toBe(false);
  });

  // The install never fails for want of a binary (issue 40): the snapshot tools need none.
  it('with no prebuild and no compiler: succeeds with one line saying what works and how to get the rest', () => {
    const { dir, bin } = packageCopy('none');
    const r = install(dir, bin);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cuda-caching-allocator: installed without the native addon \(no prebuild loads on linux-x64, glibc [\d.]+, Node [\d.]+ \(Node-API \d+\), and cmake and a C\+\+ compiler are not on PATH to build one\): the snapshot tools work \(npx cca summary.*\); the live allocator .* does not\. For it: install cmake and a C\+\+17 compiler and run `npm rebuild cuda-caching-allocator`, or use linux-x64 \(glibc\) or linux-arm64 \(glibc\) with glibc >= 2\.34\.$/);
  });

  it('a prebuild that does not load here (an older glibc, another arch) falls to the source build, and says why', () => {
    const { dir, bin } = packageCopy('broken');
    const r = install(dir, bin);
    expect(r.status).toBe(0);  // no compiler on this PATH: installed without the addon, saying why
    expect(r.stdout).toMatch(/no prebuild loads on linux-x64.*\(.+\), and cmake and a C\+\+ compiler are not on PATH/);
  });

  it('--build-from-source and npm rebuild skip the prebuild, and fail loudly where nothing can build', () => {
    const { dir, bin } = packageCopy('good');
    for (const env of [{ npm_config_build_from_source: 'true' }, { npm_command: 'rebuild' }] as Record<string, string>[]) {
      const r = install(dir, bin, env);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('a build from source was asked for, but it cannot be built here.');
      expect(r.stderr).toMatch(/this machine: linux-x64, glibc [\d.]+, Node [\d.]+ \(Node-API \d+\)/);
      expect(r.stderr).toContain('looked for:   prebuilds/linux-x64/*.glibc.node (found: cuda-caching-allocator.glibc.node');
      expect(r.stderr).toContain('needs cmake (>= 3.15) and a C++17 compiler (g++ or clang++), which are not on PATH');
      expect(r.stderr).toContain('then run: npm rebuild cuda-caching-allocator');
      expect(r.stderr).not.toMatch(/\n\s+at /);  // no stack trace
    }
  });
});
