// The viewer's what-if replays, in a Web Worker (bundled by scripts/build-viewer.mjs with the
// wasm engine in front of it, both inlined in the page): for each request, the device's
// recording (decoded once, then kept) replayed under the settings asked on the wasm engine,
// answered with what-if's row for it and our reserved memory after every entry.
import { textToTransfer, type RecordingText } from '../replay/recording-text.js';
import { fromTransfer } from '../replay/recording-transfer.js';
import type { Recording } from '../replay/recording.js';
import { replayRecording } from '../replay/replay.js';
import { whatIfRow, type WhatIfRow } from '../replay/what-if-row.js';

/** What the page asks. */
export interface WhatIfRequest {
  id: number;
  device: number;
  recording: RecordingText;
  settings: string;
  capacityBytes: number;
}

/** What the worker answers. */
export type WhatIfAnswer =
  | { id: number; row: WhatIfRow; series: Float64Array }
  | { id: number; error: { message: string; code?: string } };

interface WorkerScope {
  onmessage: ((e: { data: WhatIfRequest }) => void) | null;
  postMessage(message: WhatIfAnswer, transfer?: ArrayBuffer[]): void;
}

const scope = globalThis as unknown as WorkerScope;
const recordings = new Map<number, Promise<Recording>>();

scope.onmessage = async ({ data: q }) => {
  try {
    let rec = recordings.get(q.device);
    if (rec === undefined) recordings.set(q.device, (rec = textToTransfer(q.recording).then(fromTransfer)));
    const recording = await rec;
    const series = new Float64Array(recording.trace.length).fill(NaN);
    const t0 = performance.now();
    const { report } = replayRecording(recording, { capacityBytes: q.capacityBytes, settings: q.settings, engine: 'wasm', series }, false);
    scope.postMessage({ id: q.id, row: whatIfRow(q.settings, q.settings === recording.settings, report, performance.now() - t0), series }, [series.buffer]);
  } catch (e) {
    const err = e as Error & { code?: string };
    scope.postMessage({ id: q.id, error: { message: err.message, code: err.code } });
  }
};
