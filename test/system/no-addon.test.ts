// The package where its native addon cannot load (no prebuild for the platform, no
// compiler): importing it loads nothing, the snapshot tools work on PyTorch's real files,
// and the live allocator says what is missing with ERR_CCA_NATIVE_UNAVAILABLE (issue 40).
// The package here is this tree's dist/ and binding.cjs copied beside its dependencies with
// no build/ and no prebuilds/, so node-gyp-build finds nothing, as on a laptop it would.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';
import { wasmBuilt } from '../support/replay.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = join(ROOT, 'test', 'fixtures', 'pytorch-h100-streams.pickle');
const ready = existsSync(join(ROOT, 'dist', 'index.js'));

function addonlessPackage(): string {
  const dir = join(tempDir('cca-no-addon-'), 'cuda-caching-allocator');
  mkdirSync(dir);
  for (const f of ['package.json', 'binding.cjs', 'dist']) cpSync(join(ROOT, f), join(dir, f), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describe.skipIf(!ready)('the package where no native addon loads', () => {
  const pkg = ready ? addonlessPackage() : '';
  const cca = (...args: string[]) => spawnSync(process.execPath, [join(pkg, 'dist', 'cli', 'main.js'), ...args], { encoding: 'utf8' });

  it('runs cca on PyTorch\'s files: summary, segments, trace, frag, leaks, viz, convert', () => {
    const out = tempDir('cca-no-addon-out-');
    expect(cca('summary', FIXTURE)).toMatchObject({ status: 0, stdout: expect.stringMatching(/history: 1494 entries/) });
    for (const args of [['segments', FIXTURE], ['trace', FIXTURE, '--limit', '3'], ['frag', FIXTURE], ['leaks', FIXTURE]]) {
      const r = cca(...args);
      expect(r.status, `${args[0]}: ${r.stderr}`).toBe(0);
      expect(r.stderr).toBe('');
    }
    expect(cca('viz', FIXTURE, '-o', join(out, 'v.html')).status).toBe(0);
    expect(readFileSync(join(out, 'v.html'), 'utf8')).toMatch(/^<!doctype html>/i);
    expect(cca('convert', FIXTURE, join(out, 'x.json')).status).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'x.json'), 'utf8')).device_traces[0]).toHaveLength(1494);
  });

  it.skipIf(!wasmBuilt)('replays and answers what-if on the wasm engine, with the native engine\'s numbers', () => {
    const here = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), ...args], { encoding: 'utf8' });
    const wasm = cca('replay', FIXTURE, '--json');
    expect(wasm.status, wasm.stderr).toBe(0);
    expect(JSON.parse(wasm.stdout)).toEqual(JSON.parse(here('replay', FIXTURE, '--json', '--engine', 'native').stdout));
    expect(cca('replay', FIXTURE).stdout).toMatch(/\(wasm engine\)/);
    const whatIf = cca('replay', FIXTURE, '--what-if', '--json');
    expect(whatIf.status, whatIf.stderr).toBe(0);
    const rows = (out: string) => (JSON.parse(out) as { rows: { ms: number }[] }).rows.map(({ ms: _, ...row }) => row);
    const report = JSON.parse(whatIf.stdout) as { engine: string };
    expect(report.engine).toBe('wasm');
    expect(rows(whatIf.stdout)).toEqual(rows(here('replay', FIXTURE, '--what-if', '--json', '--engine', 'native').stdout));
  });

  it('says what is missing when asked for the native engine', () => {
    const r = cca('replay', FIXTURE, '--engine', 'native');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/native addon could not be loaded on linux-.*npm rebuild cuda-caching-allocator.*ERR_CCA_NATIVE_UNAVAILABLE/s);
  });

  it.each([
    ['ESM', 'mjs', `import * as cca from ${JSON.stringify('PKG/dist/index.js')};`],
    ['CommonJS', 'cjs', `const cca = require(${JSON.stringify('PKG')});`],
  ])('from %s: imports, reads a snapshot, probes without throwing, and the live API throws a coded error', (_kind, ext, head) => {
    const dir = tempDir('cca-no-addon-use-');
    const file = join(dir, `use.${ext}`);
    const body = `${head.replace('PKG', pkg)}
const snap = cca.loadSnapshot(${JSON.stringify(FIXTURE)});
const frag = cca.analysis.fragmentation(snap);
const probe = cca.cuda.probe();
const info = cca.cuda.runtimeInfo();
const codes = [];
for (const f of [() => cca.cuda.alloc(16), () => cca.memory.memory_allocated(), () => new cca.MemPool(), () => cca.cuda.Stream.create()]) {
  try { f(); codes.push(null); } catch (e) { codes.push(e.code); }
}
console.log(JSON.stringify({ segments: snap.segments.length, frag: frag.length, probe, backend: info.backend, note: info.note,
  available: cca.cuda.isAvailable(), codes }));
`;
    writeFileSync(file, body);
    const out = JSON.parse(execFileSync(process.execPath, [file], { encoding: 'utf8', cwd: dir }).trim());
    expect(out.segments).toBeGreaterThan(0);
    expect(out.frag).toBeGreaterThan(0);
    expect(out.probe).toMatchObject({ available: false, reason: expect.stringMatching(/native addon could not be loaded/) });
    expect(out.backend).toBe('none');
    expect(out.note).toMatch(/npm rebuild cuda-caching-allocator/);
    expect(out.available).toBe(false);
    expect(out.codes).toEqual(Array(4).fill('ERR_CCA_NATIVE_UNAVAILABLE'));
  });
});
