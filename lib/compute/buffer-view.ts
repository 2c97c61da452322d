// A range of a DeviceBuffer, passed to a kernel in place of the whole buffer: the kernel
// gets the range's address, and the launch checks, and records on its stream, the buffer
// the range lies in.
import type { DeviceBuffer } from '../device-buffer.js';

export class BufferView {
  /** The buffer the range lies in. */
  readonly buffer: DeviceBuffer;
  /** Where the range starts in the buffer, in bytes. */
  readonly offset: number;
  /** The range's length in bytes. */
  readonly size: number;

  /** @internal Views come from DeviceBuffer.view(). */
  constructor(buffer: DeviceBuffer, offset: number, size: number) {
    this.buffer = buffer;
    this.offset = offset;
    this.size = size;
  }

  /** The range's device address. */
  get ptr(): number {
    return this.buffer.ptr + this.offset;
  }
}
