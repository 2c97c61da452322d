// Questions and notes about one live allocation, by buffer or by address, with no snapshot
// built: where it was made (_allocation_traceback) and what it turned out to be for
// (_annotate_memory). Each is one lookup under the allocator's lock.
import { native } from '../native.js';
import { DeviceBuffer } from '../device-buffer.js';
import { resolveDevice } from '../device.js';
import { checkInteger, checkString, typeError } from '../validate.js';
import { capture } from './record.js';
import { stacks, tags } from './stack-store.js';
import type { Frame } from '../snapshot/types.js';

/** The device and address a DeviceBuffer or a pointer names; a freed buffer is refused, naming `operation`. */
function locate(buffer: DeviceBuffer | number, device: number | undefined, operation: string): { d: number; ptr: number } {
  if (DeviceBuffer.isDeviceBuffer(buffer)) {
    buffer.assertLive(operation);
    if (device !== undefined && resolveDevice(device) !== buffer.device) {
      throw typeError(`undefined or ${buffer.device} (the buffer's device)`, 'device', device);
    }
    return { d: buffer.device, ptr: buffer.ptr };
  }
  if (typeof buffer !== 'number') throw typeError('a DeviceBuffer or a device pointer (a non-negative integer)', 'buffer', buffer);
  return { ptr: checkInteger('buffer', buffer, 0, Number.MAX_SAFE_INTEGER), d: resolveDevice(device) };
}

/**
 * The stack a live allocation was made from, without building a snapshot (PyTorch's
 * _allocation_traceback(data_ptr)): `buffer` a live DeviceBuffer, or a device pointer
 * (`buf.ptr`, or any address inside the bytes an allocation asked for) on `device`.
 * Returns the frames innermost first, or null when no live allocation holds the address
 * or no stack was recorded for it (history off, context null, or a sampled-out stack).
 */
export function _allocation_traceback(buffer: DeviceBuffer | number, device?: number): Frame[] | null {
  const { d, ptr } = locate(buffer, device, '_allocation_traceback');
  const stack = native.allocationStack(d, ptr);
  if (stack <= 0) return null;  // no live allocation there, or no stack kept for it
  const frames = stacks.frames(stack);
  return frames.length === 0 ? null : frames;
}

/**
 * Attaches `metadata` to a live allocation after the fact (PyTorch's _annotate_memory): an
 * `annotate` history entry at the allocation's address, with the metadata as its
 * user_metadata and, when trace entries keep stacks (context 'alloc' or 'all'), this call's
 * stack. The allocation's own label is untouched and annotations accumulate. Records
 * nothing while history is off; an address no live allocation holds is an error either way.
 */
export function _annotate_memory(buffer: DeviceBuffer | number, metadata: string, device?: number): void {
  const { d, ptr } = locate(buffer, device, '_annotate_memory');
  checkString('metadata', metadata);
  const stackId = capture.enabled && capture.level >= 2 ? stacks.capture(_annotate_memory) : 0;
  native.annotateMemory(d, ptr, stackId, metadata === '' ? 0 : tags.id(metadata));
}
