// The public JS pair, cuda.alloc(4096).free(), of a revision's lib/ against the working
// tree's, interleaved in one process over the one addon built here (so it isolates what
// lib/ does; bench/core-ab.mjs compares addons). The revision's lib/ is compiled into
// .ab-lib/ (git-ignored) with its native.js pointed at this tree's addon. Ratios are
// against an empty N-API pair timed between them; p10 and median of 31 rounds of 3e5 pairs.
// Usage: node bench/js-lib-ab.mjs --base REV   (after `npm run build`)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const base = process.argv[process.argv.indexOf('--base') + 1];
if (!process.argv.includes('--base') || !base) throw new Error('usage: node bench/js-lib-ab.mjs --base REV');

const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'cca-lib-ab-'));
const out = path.join(root, '.ab-lib');
fs.rmSync(out, { recursive: true, force: true });
execFileSync('git', ['-C', root, 'archive', base, 'lib', 'tsconfig.json', 'binding.d.ts', 'package.json', '-o', path.join(tree, 'src.tar')]);
execFileSync('tar', ['-xf', 'src.tar'], { cwd: tree });
fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--outDir', out],
  { cwd: tree, stdio: 'inherit' });
const nativeJs = path.join(out, 'native.js');
fs.writeFileSync(nativeJs, fs.readFileSync(nativeJs, 'utf8').replace("'../binding.cjs'", JSON.stringify(path.join(root, 'binding.cjs'))));
fs.rmSync(tree, { recursive: true, force: true });

const A = await import(pathToFileURL(path.join(out, 'index.js')).href);
const B = await import(pathToFileURL(path.join(root, 'dist/index.js')).href);
// The addon object itself, not the lazy stand-in (whose every call would go through a proxy).
const native = (await import(pathToFileURL(path.join(root, 'dist/native.js')).href)).loadNative();
const { freshState, machine } = await import('./common.mjs');
const { fillCache } = await import('./cache-setup.mjs');

const iters = 3e5;
const time = (fn) => {
  const t0 = process.hrtime.bigint();
  fn(iters);
  return Number(process.hrtime.bigint() - t0) / iters;
};
freshState({ capacityBytes: 64 * 2 ** 30 });
fillCache(native, 1000);
const slots = native.callSlots?.();
const sides = {
  base: (k) => { let s = 0; for (let i = 0; i < k; i++) s += native.noop(0, 4096) + native.noop(0, s & 1); return s; },
  // The cheapest crossing: no arguments, no result (what the public alloc pays since the call slots).
  'argument-less pair': (k) => { for (let i = 0; i < k; i++) { slots[1] = i; native.noopInSlots(); native.noopInSlots(); } },
  [base]: (k) => { for (let i = 0; i < k; i++) A.cuda.alloc(4096).free(); },
  'working tree': (k) => { for (let i = 0; i < k; i++) B.cuda.alloc(4096).free(); },
};
const runs = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
for (let r = 0; r < 31; r++) for (const k in sides) runs[k].push(time(sides[k]));
const at = (a, p) => [...a].sort((x, y) => x - y)[Math.floor(p * (a.length - 1))];
console.log(`public JS pair over 1k cached blocks, lib/ at ${base} against the working tree (${machine()})`);
for (const p of [0.1, 0.5]) {
  const b = at(runs.base, p);
  console.log(`p${p * 100}: ` + Object.keys(sides).map((k) => `${k} ${at(runs[k], p).toFixed(1)} ns (${(at(runs[k], p) / b).toFixed(2)}x)`).join('  '));
}
fs.rmSync(out, { recursive: true, force: true });
