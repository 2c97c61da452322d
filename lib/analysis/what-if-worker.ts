// One what-if worker thread: takes simulated devices of its own (so the other workers'
// replays and the main thread's runtime are untouched), rebuilds the history from the
// shared trace, replays it under each of the settings it is given, and answers with the
// reports and their times.
import { parentPort, workerData } from 'node:worker_threads';
import * as cuda from '../cuda.js';
import { replayOnSim } from './replay.js';
import type { ReplayReport } from './replay-report.js';
import { snapshotOf } from './replay-input.js';
import type { WhatIfJob } from './what-if.js';

const job = workerData as WhatIfJob;
try {
  cuda.sim.isolate();
  const snap = snapshotOf(job.input);
  const results: { settings: string; report: ReplayReport; ms: number }[] = [];
  for (const settings of job.settings) {
    const t0 = performance.now();
    const report = replayOnSim(snap, { device: job.input.device, capacityBytes: job.capacityBytes, settings });
    results.push({ settings, report, ms: performance.now() - t0 });
  }
  parentPort!.postMessage({ results });
} catch (e) {
  const err = e as Error & { code?: string };
  parentPort!.postMessage({ error: { message: err.message, code: err.code } });
}
