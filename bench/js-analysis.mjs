// The analyses on a 1M-entry history recorded here: 100 annotated steps of 3,333
// allocations freed in the step plus one kept (a leak). Times frag, leaks, diff (of the
// snapshot with itself: every group compared) and replay, each once after the snapshot.
import { analysis, replay } from '../dist/index.js';
import { freshState, machine, recordMillionEvents } from './common.mjs';

freshState();
const { snap, keep } = recordMillionEvents();
const time = (f) => {
  const t0 = performance.now();
  const r = f();
  return [performance.now() - t0, r];
};
const entries = snap.device_traces[0].length;
console.log(`analyses of a ${entries}-entry history (${machine()})`);
const [fragMs] = time(() => analysis.fragmentation(snap));
console.log(`fragmentation (frag)     ${fragMs.toFixed(0).padStart(6)} ms`);
const [leakMs, leaks] = time(() => analysis.findLeaks(snap));
console.log(`findLeaks (leaks)        ${leakMs.toFixed(0).padStart(6)} ms   growing stacks: ${leaks.groups.filter((g) => g.growing).length}, survivors ${leaks.survivors.count}`);
const [diffMs] = time(() => analysis.diffSnapshots(snap, snap));
console.log(`diffSnapshots (diff)     ${diffMs.toFixed(0).padStart(6)} ms`);
for (const b of keep) b.free();
const [replayMs, r] = time(() => replay.replayOnSim(snap));
console.log(`replayOnSim (replay)     ${replayMs.toFixed(0).padStart(6)} ms   ${(replayMs * 1e3 / entries).toFixed(2)} us/entry; reproduced exactly: ${r.firstDivergence === null}`);
