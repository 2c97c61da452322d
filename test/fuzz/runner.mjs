// Runs fuzz cases through a pool of child processes (each with its own allocator runtime,
// which replay replaces), with a time limit and a heap limit per case. A case is:
//   valid        read, and every command ran (coded refusals by a command are counted too)
//   clean error  refused by the reader with a coded error
//   crash        an uncoded error anywhere, or the child died (out of memory, a signal)
//   hang         still running at the time limit (the child is killed and replaced)
// The first cases are special files handed over by path (a FIFO with no writer, a socket,
// devices, a directory, links to them): each must be refused, for reading and as a dump's
// target, without blocking.
// Crashing and hanging inputs are written to `failuresDir` to reproduce them.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeSnapshot } from '../../dist/snapshot/dump.js';
import { caseMaker } from './cases.mjs';
import { specialFiles } from '../support/special-files.mjs';

const CHILD = fileURLToPath(new URL('./child.mjs', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.pickle', import.meta.url));

/** Seed files: PyTorch's fixture first, then our own dumps of a recorded history. */
export async function seedFiles() {
  const { cuda, memory } = await import('../../dist/index.js');
  cuda.sim.configure();
  memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 400 });
  const side = cuda.Stream.create();
  const keep = [];
  for (let step = 0; step < 4; step++) {
    memory.annotate('step', () => {
      const a = cuda.alloc(3 << 20, { tag: 'act' });
      const b = cuda.alloc(1000 + step, { stream: side });
      cuda.recordStream(a, side);
      keep.push(cuda.alloc(64 << 10));
      a.free();
      b.free();
    });
  }
  const snap = memory._snapshot();
  memory._record_memory_history(null);
  for (const k of keep) k.free();
  return [
    { name: 'pytorch-fixture.pickle', bytes: readFileSync(FIXTURE) },
    { name: 'ours.pickle', bytes: encodeSnapshot(snap, 'pickle') },
    { name: 'ours.json', bytes: encodeSnapshot(snap, 'json') },
  ];
}

export async function runFuzz({ cases, seed = 1, workers = 2, timeoutMs = 20_000, heapMb = 1024, failuresDir, fixtureShare, onProgress } = {}) {
  const makeBytes = caseMaker(seed, await seedFiles(), { fixtureShare });
  const specialDir = mkdtempSync(join(tmpdir(), 'cca-fuzz-special-'));
  const special = await specialFiles(specialDir);
  const paths = Object.entries(special.paths);
  const make = (i) => (i < paths.length ? { label: `special-${paths[i][0]}`, path: paths[i][1] } : makeBytes(i));
  const stats = { cases: 0, valid: 0, cleanErrors: 0, crashes: 0, hangs: 0, commandRefusals: 0, byLabel: {}, codes: {}, failures: [] };
  let next = 0;
  const record = (i, label, outcome, detail) => {
    stats.cases++;
    stats[outcome]++;
    const l = (stats.byLabel[label] ??= { valid: 0, cleanErrors: 0, crashes: 0, hangs: 0 });
    l[outcome]++;
    if (outcome === 'crashes' || outcome === 'hangs') {
      stats.failures.push({ case: i, label, outcome, detail });
    }
    onProgress?.(stats);
  };
  const saveFailure = (i, c) => {
    if (!failuresDir) return;
    mkdirSync(failuresDir, { recursive: true });
    if (c.path) writeFileSync(join(failuresDir, `seed${seed}-case${i}-${c.label}.txt`), `${c.path}\n`);
    else writeFileSync(join(failuresDir, `seed${seed}-case${i}-${c.label}.bin`), c.bytes);
  };

  async function worker() {
    let child = null;
    const start = () => new Promise((resolve, reject) => {
      const p = fork(CHILD, [], { execArgv: [`--max-old-space-size=${heapMb}`], serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
      p.stderr.resume();
      p.once('message', (m) => (m.ready ? resolve(p) : reject(new Error('child did not start'))));
      p.once('error', reject);
    });
    for (;;) {
      const i = next++;
      if (i >= cases) break;
      const c = make(i);
      child ??= await start();
      const result = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ hang: true }), timeoutMs);
        const onExit = (code, signal) => resolve({ died: `exit ${code} ${signal ?? ''}`.trim() });
        child.once('exit', onExit);
        child.once('message', (m) => {
          clearTimeout(timer);
          child.off('exit', onExit);
          resolve(m);
        });
        child.send(c.path ? { id: i, path: c.path } : { id: i, bytes: c.bytes });
      });
      if (result.hang || result.died) {
        child.removeAllListeners();
        child.kill('SIGKILL');
        child = null;
        saveFailure(i, c);
        record(i, c.label, result.hang ? 'hangs' : 'crashes', result.hang ? `over ${timeoutMs} ms` : result.died);
        continue;
      }
      for (const code of result.codes) stats.codes[code] = (stats.codes[code] ?? 0) + 1;
      if (result.crash) {
        saveFailure(i, c);
        record(i, c.label, 'crashes', result.crash);
      } else if (result.parsed) {
        if (result.codes.length > 0) stats.commandRefusals++;
        record(i, c.label, 'valid');
      } else {
        record(i, c.label, 'cleanErrors');
      }
    }
    if (child) {
      child.removeAllListeners();
      child.kill();
    }
  }
  try {
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    await special.close();
    rmSync(specialDir, { recursive: true, force: true });
  }
  return stats;
}
