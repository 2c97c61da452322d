// One what-if process: reads the snapshot file once, replays its history under each of the
// settings it is given (each replay starts from a fresh simulated runtime), and answers
// with the reports and their times.
import { loadSnapshot } from '../snapshot/load.js';
import { replayOnSim, type ReplayReport } from './replay.js';
import type { WhatIfJob } from './what-if.js';

process.once('message', (job: WhatIfJob) => {
  try {
    const snap = loadSnapshot(job.file, { maxBytes: job.maxBytes });
    const results: { settings: string; report: ReplayReport; ms: number }[] = [];
    for (const settings of job.settings) {
      const t0 = performance.now();
      const report = replayOnSim(snap, { device: job.device, capacityBytes: job.capacityBytes, settings });
      results.push({ settings, report, ms: performance.now() - t0 });
    }
    process.send!({ results }, () => process.exit(0));
  } catch (e) {
    const err = e as Error & { code?: string };
    process.send!({ error: { message: err.message, code: err.code } }, () => process.exit(1));
  }
});
