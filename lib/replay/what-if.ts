// "Would other allocator settings have avoided this OOM, or cut the peak?": the recorded
// history replayed under several settings, one row each. The replays run in parallel in
// worker threads, each on simulated devices of its own (cuda.sim.isolate), so neither the
// caller's runtime nor another worker's replay is touched. The history is read once, here
// (recording.ts), and posted to the workers (recording-transfer.ts); each replays its share
// of the settings. A file whose private pools had to be read from its releases, with runs
// that reading left open, is first replayed under its own settings alone, which decides those
// runs (search.ts); the other settings are then replayed on the reading it chose.
import { Worker } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { AllocatorError } from '../errors.js';
import type { Snapshot } from '../snapshot/types.js';
import { checkInteger, checkOptions, checkString, typeError } from '../validate.js';
import { deviceArg, snapshotArg } from '../analysis/args.js';
import type { ReplayReport } from './report.js';
import { whatIfRow as row } from './what-if-row.js';
import { replayEngine, type EngineName } from './engine.js';
import { readRecording, type Recording } from './recording.js';
import { replayRecording } from './replay.js';
import { toTransfer, type RecordingTransfer } from './recording-transfer.js';

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
  /** Which allocator replays (ReplayOptions.engine): default native where the addon loads, else wasm. */
  engine?: EngineName;
}

import type { WhatIfRow } from './what-if-row.js';
export type { WhatIfRow };

export interface WhatIfReport {
  device: number;
  /** The engine the replays ran on. */
  engine: EngineName;
  capacityBytes: number;
  entries: number;
  rows: WhatIfRow[];
  workers: number;
  ms: number;
}

/** @internal What a worker is asked: `search`, decide the pool reading's open runs (one
 *  setting, the recorded one) and answer with the runs it read as pools' ends. */
export interface WhatIfJob {
  recording: RecordingTransfer;
  capacityBytes: number;
  settings: string[];
  search: boolean;
  engine: EngineName;
}

/** @internal */
export type WorkerAnswer = { settings: string; report: ReplayReport; ms: number; forced: [number, boolean][] }[];

/**
 * Replays a snapshot's history under the recorded settings and the standard alternatives
 * (WHAT_IF_SETTINGS, then `options.settings`), in parallel. `snapshot` is a snapshot or the
 * path of a snapshot file. The file is read once, here; the workers share its trace.
 */
export async function whatIf(snapshot: Snapshot | string, options?: WhatIfOptions): Promise<WhatIfReport> {
  const started = performance.now();
  const o = checkOptions<WhatIfOptions>('whatIf options', options, ['device', 'capacityBytes', 'settings', 'workers', 'maxBytes', 'engine']);
  const engine = replayEngine(o.engine).name;
  const maxBytes = o.maxBytes === undefined ? undefined : checkInteger('options.maxBytes', o.maxBytes, 1, 2 ** 53 - 1);
  const device = o.device === undefined ? 0 : deviceArg(o.device, 'options.device');
  const extra = o.settings === undefined ? [] : o.settings;
  if (!Array.isArray(extra)) throw typeError('an array of settings strings', 'options.settings', extra);
  extra.forEach((v, i) => replayEngine(engine).checkSettings(checkString(`options.settings[${i}]`, v)));
  const workersWanted = o.workers === undefined ? availableParallelism() : checkInteger('options.workers', o.workers, 1, 256);
  const given = typeof snapshot === 'string' ? null : snapshotArg(snapshot);
  const givenCapacity = o.capacityBytes === undefined ? undefined : checkInteger('options.capacityBytes', o.capacityBytes, 1, 2 ** 40);
  // The threads start first: each loads the addon and takes devices of its own while this
  // one reads the file.
  const threads = Array.from({ length: Math.max(1, Math.min(WHAT_IF_SETTINGS.length + 1 + extra.length, workersWanted)) },
    () => new ReplayThread(engine));
  const bySettings = new Map<string, { report: ReplayReport; ms: number }>();
  let rec: Recording;
  let capacityBytes: number;
  let all: string[];
  try {
    let snap: Snapshot;
    if (given === null) {
      const { loadSnapshot } = await import('../snapshot/load.js');
      snap = loadSnapshot(snapshot as string, { maxBytes });
    } else {
      snap = given;
    }
    rec = readRecording(snap, device);
    capacityBytes = givenCapacity ?? rec.capacity ?? 256 * 2 ** 30;
    all = [...new Set([rec.settings, ...WHAT_IF_SETTINGS, ...extra])];
    if (rec.inferred && (rec.inferred.open.length > 0 || rec.inferred.ooms.length > 0)) {
      const [first] = await threads[0]!.run({ recording: toTransfer(rec), capacityBytes, settings: [rec.settings], search: true, engine });
      bySettings.set(rec.settings, first!);
      rec = readRecording(snap, device, new Map(first!.forced));
    }
    const rest = all.filter((settings) => !bySettings.has(settings));
    const shares: string[][] = Array.from({ length: Math.min(threads.length, rest.length) }, () => []);
    rest.forEach((settings, i) => shares[i % shares.length]!.push(settings));
    const recording = toTransfer(rec);
    const results = await Promise.all(shares.map((share, k) => threads[k]!.run({ recording, capacityBytes, settings: share, search: false, engine })));
    for (const list of results) for (const r of list) bySettings.set(r.settings, r);
  } finally {
    for (const t of threads) t.close();
  }
  const workers = Math.min(threads.length, all.length);
  return {
    device, engine, capacityBytes, entries: rec.trace.length, workers,
    rows: all.map((settings) => {
      const r = bySettings.get(settings)!;
      return row(settings, settings === rec.settings, r.report, r.ms);
    }),
    ms: performance.now() - started,
  };
}

/**
 * The recording what-if replays every setting on: where a file's private pools had to be read
 * from its releases with runs left open, the reading a replay under the recorded settings
 * decides (as whatIf's first job does); else the recording as read. Synchronous, on this
 * thread (the viewer embeds it for its what-if panel, deciding on the wasm engine so that
 * writing a viewer never touches the caller's runtime).
 */
export function decidedRecording(snap: Snapshot, device: number, engine?: EngineName): Recording {
  const rec = readRecording(snap, device);
  if (!rec.inferred || (rec.inferred.open.length === 0 && rec.inferred.ooms.length === 0)) return rec;
  const { rec: chosen } = replayRecording(rec, { capacityBytes: rec.capacity ?? 256 * 2 ** 30, settings: rec.settings, engine });
  return readRecording(snap, device, new Map(chosen.forced));
}

// Built into dist/replay/ beside this file; from the sources (tests), the built copy.
function workerScript(): string {
  for (const rel of ['./what-if-worker.js', '../../dist/replay/what-if-worker.js']) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new AllocatorError('the what-if worker script is not built: run npm run build:ts', 'ERR_CCA_NOT_BUILT');
}

/** A worker thread that replays the jobs it is given, one at a time, until closed. */
class ReplayThread {
  readonly #worker: Worker;
  #waiting: { resolve: (a: WorkerAnswer) => void; reject: (e: Error) => void } | null = null;
  #crash: Error | undefined;
  #stopped: Error | null = null;

  /** `engine` decides what the thread does first: on the native one it takes devices of its own. */
  constructor(engine: EngineName) {
    this.#worker = new Worker(workerScript(), { workerData: { engine } });
    this.#worker.on('message', (m: { results?: WorkerAnswer; error?: { message: string; code?: string } }) => {
      const waiting = this.#waiting;
      this.#waiting = null;
      if (m.results) waiting?.resolve(m.results);
      else waiting?.reject(new AllocatorError(m.error!.message, m.error!.code ?? 'ERR_CCA_WHAT_IF_FAILED'));
    });
    this.#worker.once('error', (e) => {
      this.#crash = e;
    });
    this.#worker.once('exit', (code) => {
      this.#stopped = new AllocatorError(`a what-if replay thread stopped (exit code ${code}) before answering` +
        (this.#crash ? `: ${this.#crash.message}` : ''), 'ERR_CCA_WHAT_IF_FAILED');
      this.#waiting?.reject(this.#stopped);
      this.#waiting = null;
    });
  }

  run(job: WhatIfJob): Promise<WorkerAnswer> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#worker.postMessage(job);
    });
  }

  close(): void {
    this.#worker.postMessage(null);
  }
}
