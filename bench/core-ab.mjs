// Old core against new, in the same program: builds the C++ A/B (bench/native/ab) from a
// git revision's native/ (default: the core before the ledger, e4a5bfa) and the working
// tree's, and runs it; then builds that revision's addon and runs bench/js-core-ab.mjs with
// both addons in one process (after `npm run build`).
// --instructions adds instruction counts per operation under callgrind (valgrind needed).
// Usage: node bench/core-ab.mjs [--base REV] [--rounds N] [--instructions] [--cpp-only] [--clean]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const base = opt('--base', 'e4a5bfa');
const rounds = opt('--rounds', '11');
const root = process.cwd();
const work = path.join(os.tmpdir(), `cca-core-ab-${base}`);
const run = (cmd, argv, options = {}) => execFileSync(cmd, argv, { stdio: 'inherit', ...options });

// The old tree: the whole revision (its addon is built below too).
if (!existsSync(path.join(work, 'native'))) {
  mkdirSync(work, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${base} | tar -x -C '${work}'`]);
}

// The core's sources of one tree: allocator (flat before the layers had folders, in
// state/ and policy/ after), common, and the sim device's files (no runtime: it picks backends).
const cppUnder = (dir) => (existsSync(dir)
  ? readdirSync(dir, { recursive: true }).filter((f) => f.endsWith('.cpp') && path.basename(f) !== 'runtime.cpp')
    .map((f) => path.join(dir, f))
  : []);
const coreSources = (tree) => [
  ...cppUnder(path.join(tree, 'native/allocator')),
  ...cppUnder(path.join(tree, 'native/common')),
  path.join(tree, 'native/device/device.cpp'),
  ...cppUnder(path.join(tree, 'native/device/sim')),  // sim_device.cpp, and sim_streams.cpp since it was split
];
const flags = ['-std=c++17', '-O3', '-DNDEBUG', '-DCCA_DEBUG=0', '-pthread'];
const out = path.join(work, 'ab');
mkdirSync(out, { recursive: true });
const objects = [];
const compile = (src, obj, extra) => {
  run('g++', [...flags, ...extra, '-c', src, '-o', obj]);
  objects.push(obj);
};
for (const [side, tree, extra] of [
  ['old', work, ['-Dcca=cca_old']],
  ['new', root, []],
]) {
  for (const src of coreSources(tree)) {
    compile(src, path.join(out, `${side}-${path.basename(src, '.cpp')}.o`), [...extra, `-I${path.join(tree, 'native')}`]);
  }
  compile(path.join(root, 'bench/native/ab/side.cpp'), path.join(out, `${side}-side.o`),
    [...extra, `-DAB_SIDE=ab_${side}`, `-I${path.join(tree, 'native')}`]);
}
compile(path.join(root, 'bench/native/ab/main.cpp'), path.join(out, 'main.o'), []);
run('g++', [...flags, ...objects, '-o', path.join(out, 'core_ab')]);
console.log(`C++ core A/B: ${base} (old) against the working tree (new); ${os.cpus()[0].model}, ${os.cpus().length} cores`);
run(path.join(out, 'core_ab'), [rounds]);

// Instructions per operation under callgrind, counted only inside each figure's loop: the
// same on every run, so a change of a few instructions shows where timings are noise.
if (args.includes('--instructions')) {
  const iters = 20000;
  const count = (side, figure, blocks) => {
    const fn = figure === 'history' ? 'traced' : figure;
    const r = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', `--toggle-collect=ab_${side}::${fn}_ns(void*, unsigned long)`,
      path.join(out, 'core_ab'), 'one', side, figure, blocks, String(iters)], { encoding: 'utf8' });
    const m = /Collected : (\d+)/.exec(r.stderr);
    if (!m) throw new Error(`callgrind failed: ${r.stderr}`);
    return Number(m[1]) / iters;
  };
  console.log(`\ninstructions per operation (callgrind, ${iters} operations, counted inside the loop only)`);
  console.log('blocks    figure          old (Ir)   new (Ir)  new/old');
  for (const blocks of ['16', '1000', '100000']) {
    for (const figure of ['pair', 'split', 'history', 'sample']) {
      const o = count('old', figure, blocks);
      const w = count('new', figure, blocks);
      console.log(`${blocks.padEnd(9)} ${figure.padEnd(13)} ${o.toFixed(0).padStart(10)} ${w.toFixed(0).padStart(10)} ${(w / o).toFixed(3).padStart(8)}`);
    }
  }
}
if (args.includes('--cpp-only')) process.exit(0);

// The old checkout built (addon and TypeScript) with this checkout's node_modules.
if (!existsSync(path.join(work, 'node_modules'))) symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'));
if (!existsSync(path.join(work, 'build/Release/cuda_caching_allocator.node'))) {
  run('npx', ['cmake-js', 'compile', '--out', 'build'], { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] });
}
if (!existsSync(path.join(work, 'dist/index.js'))) run('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: work });
if (!existsSync(path.join(root, 'build/Release/cuda_caching_allocator.node')) || !existsSync(path.join(root, 'dist/index.js'))) {
  throw new Error('build this checkout first: npm run build');
}
console.log('');
run(process.execPath, [path.join(root, 'bench/js-core-ab.mjs'), work, root], { env: { ...process.env, AB_ROUNDS: rounds } });
if (args.includes('--clean')) rmSync(work, { recursive: true, force: true });
