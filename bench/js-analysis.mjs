// The analyses on a 1M-entry history recorded here: 100 annotated steps of 3,333
// allocations freed in the step plus one kept (a leak). Times frag, leaks, diff (of the
// snapshot with itself: every group compared) and replay, each once after the snapshot.
import { analysis, cuda, memory } from '../dist/index.js';
import { freshState, machine } from './common.mjs';

freshState();
memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 1_100_000 });
const keep = [];
for (let step = 0; step < 100; step++) {
  memory.annotate('step', () => {
    const tmp = [];
    for (let i = 0; i < 3333; i++) tmp.push(cuda.alloc(512 * (1 + (i % 200))));
    keep.push(cuda.alloc(4096));
    for (const b of tmp) b.free();
  });
}
const time = (f) => {
  const t0 = performance.now();
  const r = f();
  return [performance.now() - t0, r];
};
const [snapMs, snap] = time(() => memory._snapshot());
memory._record_memory_history(null);
const entries = snap.device_traces[0].length;
console.log(`analyses of a ${entries}-entry history (${machine()})`);
console.log(`_snapshot()              ${snapMs.toFixed(0).padStart(6)} ms`);
const [fragMs] = time(() => analysis.fragmentation(snap));
console.log(`fragmentation (frag)     ${fragMs.toFixed(0).padStart(6)} ms`);
const [leakMs, leaks] = time(() => analysis.findLeaks(snap));
console.log(`findLeaks (leaks)        ${leakMs.toFixed(0).padStart(6)} ms   growing stacks: ${leaks.groups.filter((g) => g.growing).length}, survivors ${leaks.survivors.count}`);
const [diffMs] = time(() => analysis.diffSnapshots(snap, snap));
console.log(`diffSnapshots (diff)     ${diffMs.toFixed(0).padStart(6)} ms`);
for (const b of keep) b.free();
const [replayMs, r] = time(() => analysis.replayOnSim(snap));
console.log(`replayOnSim (replay)     ${replayMs.toFixed(0).padStart(6)} ms   ${(replayMs * 1e3 / entries).toFixed(2)} us/entry; reproduced exactly: ${r.firstDivergence === null}`);
