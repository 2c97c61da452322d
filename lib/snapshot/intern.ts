// Equal frames and equal frame lists made one object each, marked shared so the pickle
// writer stores each once and refers to it after. JSON has no references, so a snapshot
// read from JSON has a copy per use; a pickle keeps only the sharing its writer made
// (PyTorch's: per traceback). PyTorch's ResNet50 file (1.5 MB) written back as a pickle:
// 4.8 MB from its JSON, 0.97 MB from its pickle, 406 KB either way once interned.
// Done by `cca convert`, not at every JSON load: on that file's 49 MB JSON it costs 200 ms
// against a 250 ms load.
import { markShared } from './shared.js';
import type { Snapshot } from './types.js';

type FrameLike = Record<string, unknown>;

// PyTorch's and our frames have these fields; a frame with others (PyTorch's FX fields) is
// keyed by all of them, in sorted order.
const PLAIN = new Set(['filename', 'line', 'name', 'column']);
const frameKey = (f: FrameLike): string => {
  const keys = Object.keys(f);
  return keys.every((k) => PLAIN.has(k))
    ? `${String(f.filename)}\0${String(f.line)}\0${String(f.name)}\0${String(f.column)}\0${keys.length}`
    : JSON.stringify(f, keys.sort());
};

/** Replaces, in place, every frames list of `snap`'s blocks and trace entries by its interned copy. */
export function internFrames(snap: Snapshot): void {
  const frames = new Map<string, FrameLike>();
  const lists = new Map<string, FrameLike[]>();
  const intern = (list: unknown): unknown => {
    if (!Array.isArray(list)) return list;
    const keys: string[] = [];
    const interned: FrameLike[] = [];
    for (const f of list as unknown[]) {
      if (typeof f !== 'object' || f === null || Array.isArray(f)) return list;  // not frames: left as read
      const key = frameKey(f as FrameLike);
      let one = frames.get(key);
      if (one === undefined) {
        one = f as FrameLike;
        markShared(one);
        frames.set(key, one);
      }
      keys.push(key);
      interned.push(one);
    }
    const listKey = keys.join('\n');
    let shared = lists.get(listKey);
    if (shared === undefined) {
      shared = interned;
      markShared(shared);
      lists.set(listKey, shared);
    }
    return shared;
  };
  for (const segment of snap.segments) {
    for (const block of segment.blocks) {
      if (block.frames !== undefined) block.frames = intern(block.frames) as typeof block.frames;
    }
  }
  for (const device of snap.device_traces ?? []) {
    for (const entry of device) {
      if (entry.frames !== undefined) entry.frames = intern(entry.frames) as typeof entry.frames;
    }
  }
}
