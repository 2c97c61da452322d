// One what-if worker thread: on the native engine it takes simulated devices of its own at
// once (so the other workers' replays and the main thread's runtime are untouched; the wasm
// engine is a module of this thread's own anyway), then for each job rebuilds
// the recording the caller posted, replays it under each of the settings it is given, and
// answers with the reports, their times and the pool reading each was made on. A null job
// ends it.
import { parentPort, workerData } from 'node:worker_threads';
import * as cuda from '../cuda.js';
import { replayRecording } from './replay.js';
import { fromTransfer } from './recording-transfer.js';
import type { WhatIfJob, WorkerAnswer } from './what-if.js';
import type { EngineName } from './engine-types.js';

let ready: Error | null = null;
if ((workerData as { engine: EngineName }).engine === 'native') {
  try {
    cuda.sim.isolate();
  } catch (e) {
    ready = e as Error;
  }
}

parentPort!.on('message', (job: WhatIfJob | null) => {
  if (job === null) {
    parentPort!.close();
    return;
  }
  try {
    if (ready) throw ready;
    const rec = fromTransfer(job.recording);
    const results: WorkerAnswer = [];
    for (const settings of job.settings) {
      const t0 = performance.now();
      const { report, rec: chosen } = replayRecording(rec, { capacityBytes: job.capacityBytes, settings, engine: job.engine }, job.search);
      results.push({ settings, report, ms: performance.now() - t0, forced: chosen.forced });
    }
    parentPort!.postMessage({ results });
  } catch (e) {
    const err = e as Error & { code?: string };
    parentPort!.postMessage({ error: { message: err.message, code: err.code } });
  }
});
