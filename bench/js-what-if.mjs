// `cca replay --what-if` at scale (node bench/js-what-if.mjs): a ~1M-entry history
// (bench/common.mjs) written as a pickle, replayed under the recorded settings and the five
// standard alternatives (6 settings) in worker threads, on each engine in turn: the native
// addon (the baseline, measured in the same run) and its WebAssembly build. Targets: < 10 s on
// 2 cores; the wasm engine within 2x of the native one. Rounds alternate the engines so that
// a machine's drift falls on both.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replay } from '../dist/index.js';
import { writeSnapshotFile } from '../dist/snapshot/dump.js';
import { wasmEnginePath } from '../dist/replay/wasm-engine.js';
import { freshState, machine, recordMillionEvents } from './common.mjs';

freshState();
const { snap, keep } = recordMillionEvents();
for (const b of keep) b.free();
const file = join(mkdtempSync(join(tmpdir(), 'cca-what-if-bench-')), 'million.pickle');
writeSnapshotFile(snap, file, 'pickle', false);
console.log(`what-if at scale (${machine()}); ${snap.device_traces[0].length} entries`);
const engines = wasmEnginePath() === null ? ['native'] : ['native', 'wasm'];
if (engines.length === 1) console.log('(the wasm engine is not built here: npm run build:wasm)');
const replayMs = (r) => r.rows.reduce((n, w) => n + w.ms, 0);
for (const workers of [1, 2]) {
  const best = {};
  for (let round = 0; round < 2; round++) {
    for (const engine of engines) {
      const r = await replay.whatIf(file, { workers, engine });
      best[engine] = Math.min(best[engine] ?? Infinity, r.ms);
      console.log(`${engine.padEnd(6)} ${workers} thread(s): ${(r.ms / 1000).toFixed(2)} s for ${r.rows.length} settings ` +
        `(replays ${(replayMs(r) / 1000).toFixed(2)} s); per replay: ` +
        r.rows.map((w) => `${w.settings || '(defaults)'} ${(w.ms / 1000).toFixed(2)} s`).join(', '));
    }
  }
  if (best.wasm !== undefined) {
    console.log(`${workers} thread(s), best of 2: wasm / native = ${(best.wasm / best.native).toFixed(2)} (target <= 2)`);
  }
}
