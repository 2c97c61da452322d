// The numbers cuda.alloc() passes to the addon, written into memory the addon shares with
// this thread rather than passed as arguments (native/binding/call_slots.h says what that
// saves). Write the slots, call, read the result: nothing runs in between.
import { native } from './native.js';

/** allocInSlots's slots: what it reads, and where the pointer comes back (call_slots.h's
 *  AllocSlot; test/contract/call-slot-layout.test.ts holds the two together). A const enum:
 *  tsc writes the numbers into cuda.alloc() itself, so the hot path loads no table. */
export const enum AllocSlot {
  Device = 0,
  Size = 1,
  Stream = 2,
  StackId = 3,
  TagId = 4,
  Ptr = 0,
}

let slots: Float64Array | undefined;

/** This thread's call slots (8 numbers). */
export function callSlots(): Float64Array {
  return (slots ??= native.callSlots());
}
