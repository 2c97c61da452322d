// Argument checks shared by the analyses: each public analysis checks what it is handed
// before it reads anything, so a wrong object gets a coded error naming the argument, never
// "Cannot read properties of undefined". Snapshots are checked once (see snapshot/check.ts).
import { checkBoolean, checkInteger, checkOptions, checkString, typeError } from '../validate.js';
import { checkAnnotations, checkFrames, checkSegmentExtent, snapshotArg } from '../snapshot/check.js';
import type { Annotation, Frame, Segment } from '../snapshot/types.js';

export { snapshotArg, checkOptions, checkString, checkBoolean };

/** A device index: a non-negative integer (a device the snapshot lacks is simply empty). */
export function deviceArg(value: unknown, name = 'device'): number {
  return checkInteger(name, value, 0, 2 ** 31 - 1);
}

export function optionalDevice(value: unknown, name = 'options.device'): number | undefined {
  return value === undefined ? undefined : deviceArg(value, name);
}

/** Stack frames per group key. */
export function depthArg(value: unknown, name = 'options.depth'): number | undefined {
  return value === undefined ? undefined : checkInteger(name, value, 1, 1000);
}

export function segmentArg(value: unknown, name = 'segment'): Segment {
  return checkSegmentExtent(value, name);
}

export function framesArg(value: unknown, name = 'frames'): Frame[] | undefined {
  return value === undefined ? undefined : checkFrames(value, name);
}

export function annotationsArg(value: unknown, name = 'annotations'): Annotation[] {
  return checkAnnotations(value, name);
}

export function functionArg<F>(value: unknown, name: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw typeError('a function', name, value);
  return value as F;
}
