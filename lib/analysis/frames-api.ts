// The stack helpers as exported to users: the same functions as frames.ts, which the
// analyses call on data already checked, with their arguments checked first.
import { checkInteger } from '../validate.js';
import { framesArg } from './args.js';
import * as frames from './frames.js';
import type { Frame } from '../snapshot/types.js';

/** Script frames with a line; failing that, any frame with a line; failing that, all. */
export function meaningfulFrames(list: readonly Frame[] | undefined): Frame[] {
  return frames.meaningfulFrames(framesArg(list));
}

/** The innermost meaningful frame, or undefined. */
export function topFrame(list: readonly Frame[] | undefined): Frame | undefined {
  return frames.topFrame(framesArg(list));
}

/** The innermost `depth` meaningful frames as one key, innermost first. */
export function stackKey(list: readonly Frame[] | undefined, depth = 3): string {
  return frames.stackKey(framesArg(list), checkInteger('depth', depth, 1, 1000));
}
