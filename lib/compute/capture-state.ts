// The graph capture in progress on this JS thread, if any (captureGraph's callback runs
// synchronously, so there is at most one): the buffers its work names and the buffers
// allocated during it. A buffer the capture names belongs to the graph: freeing it is refused
// while the graph lives (its replays would write freed memory), except for a buffer allocated
// during the capture and freed during it, whose memory the graph's private pool keeps.
import type { DeviceBuffer } from '../device-buffer.js';

export interface CaptureRecord {
  readonly device: number;
  /** Buffers the captured work names (launches, async copies). */
  readonly named: Set<DeviceBuffer>;
  /** Buffers allocated while the capture ran. */
  readonly allocated: Set<DeviceBuffer>;
}

/** The capture in progress on this thread, or null (read on every alloc: keep it a plain binding). */
export let recording: CaptureRecord | null = null;

export function setRecording(r: CaptureRecord | null): void {
  recording = r;
}
