// The numbers cuda.alloc() passes to the addon, written into memory the addon shares with
// this thread rather than passed as arguments (native/binding/call_slots.h says what that
// saves). Write the slots, call, read the result: nothing runs in between.
import { native } from './native.js';

let slots: Float64Array | undefined;

/** This thread's call slots (8 numbers). */
export function callSlots(): Float64Array {
  return (slots ??= native.callSlots());
}
