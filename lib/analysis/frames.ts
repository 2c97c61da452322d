// Which frames of a recorded stack say where an allocation came from. PyTorch's stacks open
// with C++ and CPython frames (`??:0`, `Objects/call.c`), ours with the JS caller; the
// script frames are the ones a reader recognises.
import type { Frame } from '../snapshot/types.js';

const SCRIPT = /\.(py|js|mjs|cjs|ts|mts|cts)$/;

/** Script frames with a line; failing that, any frame with a line; failing that, all. */
export function meaningfulFrames(frames: readonly Frame[] | undefined): Frame[] {
  if (!frames || frames.length === 0) return [];
  const script = frames.filter((f) => SCRIPT.test(String(f.filename)) && f.line > 0);
  if (script.length > 0) return script;
  const lined = frames.filter((f) => f.line > 0);
  return lined.length > 0 ? lined : [...frames];
}

export function topFrame(frames: readonly Frame[] | undefined): Frame | undefined {
  return meaningfulFrames(frames)[0];
}

export const NO_STACK = '(no stack recorded)';

export function formatFrame(f: Frame): string {
  return `${f.name} ${f.filename}:${f.line}`;
}

/** The innermost `depth` meaningful frames as one key, innermost first. */
export function stackKey(frames: readonly Frame[] | undefined, depth = 3): string {
  const picked = meaningfulFrames(frames).slice(0, depth);
  return picked.length === 0 ? NO_STACK : picked.map(formatFrame).join(' <- ');
}
