// DeviceBuffer.free() without a crossing: the free writes its device and pointer into a
// list the addon shares with this thread, and the addon frees them at the thread's next
// call, before that call's own work (native/binding/pending_frees.h says why nothing this
// thread does can tell the difference). A cached alloc+free pair then crosses once. A
// microtask hands the list over at the end of the current job, so frees do not wait on a
// thread that goes idle: other threads (workers, native code on its own threads) see a free
// by then at the latest.
import { native } from './native.js';

let list: Float64Array | undefined;
let capacity = 0;
let scheduled = false;

function open(): Float64Array {
  const l = native.pendingFrees();
  capacity = (l.length - 1) / 2;
  return l;
}

function handOver(): void {
  scheduled = false;
  if (list![0] === 0) return;
  try {
    native.handOverFrees();
  } catch (e) {
    // A free the allocator refused though its DeviceBuffer was live: a bug of ours, said
    // where it cannot take down the job that happened to end here.
    process.emitWarning(e as Error, { code: 'CCA_PENDING_FREE_FAILED' });
  }
}

/** Lists a free of `ptr` on `device` for the thread's next call; false when the list is full. */
export function deferFree(device: number, ptr: number): boolean {
  const l = (list ??= open());
  const n = l[0]!;
  if (n === capacity) return false;
  l[2 * n + 1] = device;
  l[2 * n + 2] = ptr;
  l[0] = n + 1;
  if (!scheduled) {
    scheduled = true;
    queueMicrotask(handOver);
  }
  return true;
}
