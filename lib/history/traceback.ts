// _allocation_traceback: one live allocation's stack, read from the allocator's record of
// it (a lookup under its lock) and the stack store, with no snapshot built.
import { native } from '../native.js';
import { DeviceBuffer } from '../device-buffer.js';
import { resolveDevice } from '../device.js';
import { checkInteger, typeError } from '../validate.js';
import { stacks, type Frame } from './stack-store.js';

/**
 * The stack a live allocation was made from, without building a snapshot (PyTorch's
 * _allocation_traceback(data_ptr)): `buffer` a live DeviceBuffer, or a device pointer
 * (`buf.ptr`, or any address inside the bytes an allocation asked for) on `device`.
 * Returns the frames innermost first, or null when no live allocation holds the address
 * or no stack was recorded for it (history off, context null, or a sampled-out stack).
 */
export function _allocation_traceback(buffer: DeviceBuffer | number, device?: number): Frame[] | null {
  let d: number;
  let ptr: number;
  if (DeviceBuffer.isDeviceBuffer(buffer)) {
    buffer.assertLive('_allocation_traceback');
    if (device !== undefined && resolveDevice(device) !== buffer.device) {
      throw typeError(`undefined or ${buffer.device} (the buffer's device)`, 'device', device);
    }
    d = buffer.device;
    ptr = buffer.ptr;
  } else if (typeof buffer === 'number') {
    ptr = checkInteger('buffer', buffer, 0, Number.MAX_SAFE_INTEGER);
    d = resolveDevice(device);
  } else {
    throw typeError('a DeviceBuffer or a device pointer (a non-negative integer)', 'buffer', buffer);
  }
  const info = native.allocationInfo(d, ptr);
  if (info === null || info[3] === 0) return null;
  const frames = stacks.frames(info[3]!);
  return frames.length === 0 ? null : frames;
}
