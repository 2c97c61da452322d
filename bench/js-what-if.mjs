// `cca replay --what-if` at scale (node bench/js-what-if.mjs): a ~1M-entry history
// (bench/common.mjs) written as a pickle, replayed under the recorded settings and the five
// standard alternatives (6 settings) in worker threads, one per core. Target: < 10 s on 2 cores.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analysis } from '../dist/index.js';
import { writeSnapshotFile } from '../dist/snapshot/dump.js';
import { freshState, machine, recordMillionEvents } from './common.mjs';

freshState();
const { snap, keep } = recordMillionEvents();
for (const b of keep) b.free();
const file = join(mkdtempSync(join(tmpdir(), 'cca-what-if-bench-')), 'million.pickle');
writeSnapshotFile(snap, file, 'pickle', false);
console.log(`what-if at scale (${machine()}); ${snap.device_traces[0].length} entries`);
for (const workers of [1, 2]) {
  const r = await analysis.whatIf(file, { workers });
  console.log(`${workers} thread(s): ${(r.ms / 1000).toFixed(2)} s for ${r.rows.length} settings (target < 10 s on 2 cores); per replay: ` +
    r.rows.map((w) => `${w.settings || '(defaults)'} ${(w.ms / 1000).toFixed(2)} s`).join(', '));
}
