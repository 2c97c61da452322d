// "Would other allocator settings have avoided this OOM, or cut the peak?": the recorded
// history replayed under several settings, one row each. The replays run in parallel in
// worker threads, each on simulated devices of its own (cuda.sim.isolate), so neither the
// caller's runtime nor another worker's replay is touched. The history is read once and its
// trace shared with the workers (replay-input.ts); each replays its share of the settings.
import { Worker } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { native } from '../native.js';
import { AllocatorError } from '../errors.js';
import type { Snapshot } from '../snapshot/types.js';
import { checkInteger, checkOptions, checkString, typeError } from '../validate.js';
import { deviceArg, snapshotArg } from './args.js';
import type { ReplayReport } from './replay-report.js';
import { recordedCapacity, settingsOf } from './replay-reading.js';
import { replayInput, type ReplayInput } from './replay-input.js';

/** Tried besides the recorded settings: PyTorch's usual remedies for fragmentation. */
export const WHAT_IF_SETTINGS: readonly string[] = [
  'expandable_segments:True',
  'max_split_size_mb:64',
  'max_split_size_mb:256',
  'roundup_power2_divisions:4',
  'roundup_power2_divisions:[256:1,512:2,1024:4,>:8]',
];

export interface WhatIfOptions {
  device?: number;
  /** The simulated device (default: the recorded device's total when an OOM entry tells it). */
  capacityBytes?: number;
  /** More settings to try (PYTORCH_CUDA_ALLOC_CONF syntax), after the standard set. */
  settings?: string[];
  /** Worker threads (default: the cores, at most one per setting). */
  workers?: number;
  /** With a file path: refuse files larger than this (loadSnapshot's limit, default 2 GiB). */
  maxBytes?: number;
}

export interface WhatIfRow {
  /** The settings replayed ('' for the defaults). */
  settings: string;
  /** True for the recorded settings' row. */
  recorded: boolean;
  peakReserved: number;
  endReserved: number;
  /** Segments allocated (device mallocs) during the replay. */
  deviceMallocs: number;
  largestFreeAtPeak: number;
  fragmentationAtPeak: number;
  /** Of the recorded OOMs, how many happen under these settings too. */
  ooms: { recorded: number; here: number };
  /** Set when an allocation the program made does not fit under these settings: it stops there. */
  stoppedAt: number | null;
  /** Wall time of this replay. */
  ms: number;
}

export interface WhatIfReport {
  device: number;
  capacityBytes: number;
  entries: number;
  rows: WhatIfRow[];
  workers: number;
  ms: number;
}

function row(settings: string, recorded: boolean, r: ReplayReport, ms: number): WhatIfRow {
  return {
    settings, recorded, peakReserved: r.ours.peakReserved, endReserved: r.ours.endReserved,
    deviceMallocs: r.ours.segmentGrowths, largestFreeAtPeak: r.oursAtPeak.largestFreeBlock,
    fragmentationAtPeak: r.oursAtPeak.fragmentation, ooms: { recorded: r.ooms.recorded, here: r.ooms.reproduced },
    stoppedAt: r.oom ? r.oom.index : null, ms,
  };
}

/** @internal What a worker is asked. */
export interface WhatIfJob {
  input: ReplayInput;
  capacityBytes: number;
  settings: string[];
}

/**
 * Replays a snapshot's history under the recorded settings and the standard alternatives
 * (WHAT_IF_SETTINGS, then `options.settings`), in parallel. `snapshot` is a snapshot or the
 * path of a snapshot file. The file is read once, here; the workers share its trace.
 */
export async function whatIf(snapshot: Snapshot | string, options?: WhatIfOptions): Promise<WhatIfReport> {
  const started = performance.now();
  const o = checkOptions<WhatIfOptions>('whatIf options', options, ['device', 'capacityBytes', 'settings', 'workers', 'maxBytes']);
  const maxBytes = o.maxBytes === undefined ? undefined : checkInteger('options.maxBytes', o.maxBytes, 1, 2 ** 53 - 1);
  const device = o.device === undefined ? 0 : deviceArg(o.device, 'options.device');
  const extra = o.settings === undefined ? [] : o.settings;
  if (!Array.isArray(extra)) throw typeError('an array of settings strings', 'options.settings', extra);
  extra.forEach((v, i) => native.checkAllocatorSettings(checkString(`options.settings[${i}]`, v)));
  const workersWanted = o.workers === undefined ? availableParallelism() : checkInteger('options.workers', o.workers, 1, 256);
  let snap: Snapshot;
  if (typeof snapshot === 'string') {
    const { loadSnapshot } = await import('../snapshot/load.js');
    snap = loadSnapshot(snapshot, { maxBytes });
  } else {
    snap = snapshotArg(snapshot);
  }
  const recordedSettings = settingsOf(snap);
  const capacityBytes = o.capacityBytes === undefined ? recordedCapacity(snap, device) ?? 256 * 2 ** 30
    : checkInteger('options.capacityBytes', o.capacityBytes, 1, 2 ** 40);
  const all = [...new Set([recordedSettings, ...WHAT_IF_SETTINGS, ...extra])];
  const workers = Math.max(1, Math.min(all.length, workersWanted));
  const shares: string[][] = Array.from({ length: workers }, () => []);
  all.forEach((settings, i) => shares[i % workers]!.push(settings));
  const input = replayInput(snap, device);
  const results = await Promise.all(shares.map((share) => runWorker({ input, capacityBytes, settings: share })));
  const bySettings = new Map<string, { report: ReplayReport; ms: number }>();
  for (const list of results) for (const r of list) bySettings.set(r.settings, r);
  return {
    device, capacityBytes, entries: input.entries, workers,
    rows: all.map((settings) => {
      const r = bySettings.get(settings)!;
      return row(settings, settings === recordedSettings, r.report, r.ms);
    }),
    ms: performance.now() - started,
  };
}

// Built into dist/analysis/ beside this file; from the sources (tests), the built copy.
function workerScript(): string {
  for (const rel of ['./what-if-worker.js', '../../dist/analysis/what-if-worker.js']) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new AllocatorError('the what-if worker script is not built: run npm run build:ts', 'ERR_CCA_NOT_BUILT');
}

type WorkerAnswer = { settings: string; report: ReplayReport; ms: number }[];

function runWorker(job: WhatIfJob): Promise<WorkerAnswer> {
  const script = workerScript();
  return new Promise((resolve, reject) => {
    const worker = new Worker(script, { workerData: job });
    let answer: WorkerAnswer | undefined;
    let failure: { message: string; code?: string } | undefined;
    let crash: Error | undefined;
    worker.on('message', (m: { results?: WorkerAnswer; error?: typeof failure }) => {
      answer = m.results;
      failure = m.error;
    });
    worker.once('error', (e) => {
      crash = e;
    });
    worker.once('exit', (code) => {
      if (answer) resolve(answer);
      else if (failure) reject(new AllocatorError(failure.message, failure.code ?? 'ERR_CCA_WHAT_IF_FAILED'));
      else {
        reject(new AllocatorError(`a what-if replay thread stopped (exit code ${code}) before answering` +
          (crash ? `: ${crash.message}` : ''), 'ERR_CCA_WHAT_IF_FAILED'));
      }
    });
  });
}
