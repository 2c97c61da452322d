// JavaScript stacks for the allocation history.
//
// Capture is V8's lazy Error.captureStackTrace: it records the frames and defers all
// formatting, which is the floor of what a JS stack costs. Nothing is symbolized here.
// Symbolization (file, line, column, function) happens when a snapshot needs the frames,
// once per captured stack; identical stacks share one frames array (interned), which the
// pickle writer then stores once.
//
// The native side keeps only the 32-bit ids. To bound memory, ids no longer referenced by
// a live block, a segment or the trace ring are dropped every so often (compaction asks
// the native side which ids are still referenced).
import { native } from '../native.js';

export interface Frame {
  filename: string;
  line: number;
  name: string;
  column: number;
}

type Holder = { stack?: unknown };

const shared = new WeakSet<object>();

/** Marks an object that may be referenced from many places (pickle memoizes it). */
export function markShared(obj: object): void {
  shared.add(obj);
}

export function isShared(obj: object): boolean {
  return shared.has(obj);
}

// Node's own modules (node:internal/..., node:events): the frames under every callback and
// module load, which tell a reader nothing about their code (PyTorch drops its own frames
// the same way). Dropped when stacks are symbolized unless `keepNodeFrames` is set.
const isNodeFrame = (s: NodeJS.CallSite): boolean => (s.getFileName() ?? '').startsWith('node:');

const toFrames = (_e: unknown, sites: NodeJS.CallSite[]): Frame[] =>
  sites.map((s) => ({
    filename: s.getFileName() ?? s.getScriptNameOrSourceURL() ?? '<unknown>',
    line: s.getLineNumber() ?? 0,
    name: s.getFunctionName() ?? (s.getMethodName() ? `${s.getTypeName() ?? ''}.${s.getMethodName()}` : '<anonymous>'),
    column: s.getColumnNumber() ?? 0,
  }));
const toOwnFrames = (e: unknown, sites: NodeJS.CallSite[]): Frame[] => toFrames(e, sites.filter((s) => !isNodeFrame(s)));

export class StackStore {
  /** Frames kept per stack. */
  depth = 16;
  /** Keep Node's own frames (node:internal/...) in symbolized stacks. */
  keepNodeFrames = false;
  #next = 1;
  #pending = new Map<number, Holder>();
  #resolved = new Map<number, Frame[]>();
  #interned = new Map<string, Frame[]>();
  #compactAt = 65536;

  /** Captures the caller's stack above `above` (a function of ours); returns its id. */
  capture(above: Function): number {
    const holder: Holder = {};
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = this.depth;
    Error.captureStackTrace(holder, above);
    Error.stackTraceLimit = limit;
    const id = this.#next;
    this.#next = id >= 0xfffffff0 ? 1 : id + 1;
    this.#pending.set(id, holder);
    if (this.#pending.size + this.#resolved.size >= this.#compactAt) this.compact();
    return id;
  }

  /** The frames of a stack id ([] for 0 or an id already dropped). */
  frames(id: number): Frame[] {
    if (id === 0) return EMPTY;
    const done = this.#resolved.get(id);
    if (done) return done;
    const holder = this.#pending.get(id);
    if (!holder) return EMPTY;
    this.#pending.delete(id);
    const saved = Error.prepareStackTrace;
    Error.prepareStackTrace = this.keepNodeFrames ? toFrames : toOwnFrames;
    let frames: Frame[];
    try {
      frames = (holder.stack as Frame[] | undefined) ?? [];
    } finally {
      Error.prepareStackTrace = saved;
    }
    const key = frames.map((f) => `${f.filename}:${f.line}:${f.column}:${f.name}`).join('\n');
    let interned = this.#interned.get(key);
    if (!interned) {
      interned = frames;
      markShared(interned);
      for (const f of interned) markShared(f);
      this.#interned.set(key, interned);
    }
    this.#resolved.set(id, interned);
    return interned;
  }

  /** Drops every stack the native side no longer references. */
  compact(): void {
    const keep = new Set(native.referencedStacks());
    for (const id of this.#pending.keys()) if (!keep.has(id)) this.#pending.delete(id);
    for (const id of this.#resolved.keys()) if (!keep.has(id)) this.#resolved.delete(id);
    const live = this.#pending.size + this.#resolved.size;
    this.#compactAt = Math.max(65536, 2 * live);
    if (this.#resolved.size === 0) this.#interned.clear();
  }

  /** Stacks held (captured but not dropped). */
  get size(): number {
    return this.#pending.size + this.#resolved.size;
  }
}

const EMPTY: Frame[] = [];
markShared(EMPTY);

export const stacks = new StackStore();

/** Tags at or above this are native clients' (include/cca.h); JS tags stay below. */
export const CLIENT_TAG_BASE = 0x80000000;

/** Interned user tags: the native side keeps 32-bit ids. */
export class TagTable {
  #ids = new Map<string, number>();
  #names: string[] = [''];
  id(tag: string): number {
    let id = this.#ids.get(tag);
    if (id === undefined) {
      id = this.#names.length;
      this.#names.push(tag);
      this.#ids.set(tag, id);
    }
    return id;
  }
  name(id: number): string {
    if (id >= CLIENT_TAG_BASE) return this.#clientName(id);
    return this.#names[id] ?? '';
  }
  // Native clients of the C ABI (interop) tag their allocations from 2^31 up, with names
  // only the native side knows; a client's name never changes, so each is asked once.
  #clientNames = new Map<number, string>();
  #clientName(id: number): string {
    let name = this.#clientNames.get(id);
    if (name === undefined) {
      name = native.clientTagName(id);
      if (name !== '') this.#clientNames.set(id, name);
    }
    return name;
  }
}

export const tags = new TagTable();
