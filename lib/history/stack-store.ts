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
import { markShared } from '../snapshot/shared.js';
import type { Frame } from '../snapshot/types.js';

type Holder = { stack?: unknown };

// Node's own modules (node:internal/..., node:events): the frames under every callback and
// module load, which tell a reader nothing about their code (PyTorch drops its own frames
// the same way). Dropped when stacks are symbolized unless `keepNodeFrames` is set.
const isNodeFile = (file: string): boolean => file.startsWith('node:');

// The call sites themselves: reading only what identifies each frame (its file and position)
// and interning as we go costs far less than formatting every frame of every capture.
const callSites = (_e: unknown, sites: NodeJS.CallSite[]): NodeJS.CallSite[] => sites;

const nameOf = (s: NodeJS.CallSite): string =>
  s.getFunctionName() ?? (s.getMethodName() ? `${s.getTypeName() ?? ''}.${s.getMethodName()}` : '<anonymous>');

/** A stack in the interning trie: the stacks that continue it, by their next frame's id. */
interface StackNode {
  next: Map<number, StackNode>;
  frames: Frame[] | null;
}

const newNode = (): StackNode => ({ next: new Map(), frames: null });

export class StackStore {
  /** Frames kept per stack. */
  depth = 16;
  /** Keep Node's own frames (node:internal/...) in symbolized stacks. */
  keepNodeFrames = false;
  #next = 1;
  #pending = new Map<number, Holder>();
  #resolved = new Map<number, Frame[]>();
  // Interning: every distinct frame (file and position; its function is named the first time
  // that position is seen, as a code address names one function) gets an id; a stack is a
  // path of ids in a trie, whose end holds the stack's one frames array.
  #frameIds = new Map<string, Map<number, number>>();
  #frameList: Frame[] = [];
  #root = newNode();
  #compactAt = 65536;
  readonly #path: number[] = [];

  /** Captures the caller's stack above `above` (a function of ours); returns its id. */
  capture(above: Function): number {
    const holder: Holder = {};
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = this.depth;
    Error.captureStackTrace(holder, above);
    Error.stackTraceLimit = limit;
    const id = this.#next;
    // Ids from NATIVE_STACK_BIT up are the native side's (C ABI callers' backtraces).
    this.#next = id >= NATIVE_STACK_BIT - 16 ? 1 : id + 1;
    this.#pending.set(id, holder);
    if (this.#pending.size + this.#resolved.size >= this.#compactAt) this.compact();
    return id;
  }

  /** The frames of a stack id ([] for 0 or an id already dropped). */
  frames(id: number): Frame[] {
    if (id === 0) return EMPTY;
    const done = this.#resolved.get(id);
    if (done) return done;
    if (id >= NATIVE_STACK_BIT) return this.#nativeFrames(id);
    const holder = this.#pending.get(id);
    if (!holder) return EMPTY;
    this.#pending.delete(id);
    const saved = Error.prepareStackTrace;
    Error.prepareStackTrace = callSites;
    let sites: NodeJS.CallSite[];
    try {
      sites = (holder.stack as NodeJS.CallSite[] | undefined) ?? [];
      // The holder (long lived, so in V8's old space) would keep the young call sites alive
      // through the next scavenges, and each capture's sites would be promoted.
      holder.stack = undefined;
    } finally {
      Error.prepareStackTrace = saved;
    }
    const path = this.#path;
    path.length = 0;
    let node = this.#root;
    for (const site of sites) {
      const file = site.getFileName() ?? site.getScriptNameOrSourceURL() ?? '<unknown>';
      if (!this.keepNodeFrames && isNodeFile(file)) continue;
      const frame = this.#frameId(file, site);
      path.push(frame);
      let next = node.next.get(frame);
      if (!next) {
        next = newNode();
        node.next.set(frame, next);
      }
      node = next;
    }
    if (!node.frames) {
      const frames = path.map((f) => this.#frameList[f]!);
      markShared(frames);
      node.frames = frames;
    }
    this.#resolved.set(id, node.frames);
    return node.frames;
  }

  // A C ABI caller's backtrace, symbolized by the native side (module, function or offset;
  // no line numbers: that would take the modules' debug information).
  #nativeFrames(id: number): Frame[] {
    const flat = native.nativeStackFrames(id);
    if (flat.length === 0) return EMPTY;
    const frames: Frame[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      const frame: Frame = { filename: flat[i] as string, line: 0, name: flat[i + 1] as string, column: 0 };
      markShared(frame);
      frames.push(frame);
    }
    markShared(frames);
    this.#resolved.set(id, frames);
    return frames;
  }

  #frameId(file: string, site: NodeJS.CallSite): number {
    const line = site.getLineNumber() ?? 0;
    const column = site.getColumnNumber() ?? 0;
    let byPosition = this.#frameIds.get(file);
    if (!byPosition) {
      byPosition = new Map();
      this.#frameIds.set(file, byPosition);
    }
    // One number per position: exact while the column fits 24 bits and the line 28.
    const position = column < 2 ** 24 && line < 2 ** 28 ? line * 2 ** 24 + column : -1;
    let id = position >= 0 ? byPosition.get(position) : undefined;
    if (id === undefined) {
      const frame: Frame = { filename: file, line, name: nameOf(site), column };
      markShared(frame);
      id = this.#frameList.push(frame) - 1;
      if (position >= 0) byPosition.set(position, id);
    }
    return id;
  }

  /** Drops every stack the native side no longer references. */
  compact(): void {
    // Read first: a native stack taken while the allocator is asked is newer, and kept.
    const below = native.nativeStacksNext();
    const referenced = native.referencedStacks();
    native.nativeStacksRetain(referenced.filter((id) => id >= NATIVE_STACK_BIT), below);
    const keep = new Set(referenced);
    for (const id of this.#pending.keys()) if (!keep.has(id)) this.#pending.delete(id);
    for (const id of this.#resolved.keys()) if (!keep.has(id)) this.#resolved.delete(id);
    const live = this.#pending.size + this.#resolved.size;
    this.#compactAt = Math.max(65536, 2 * live);
    if (this.#resolved.size === 0) {
      this.#frameIds.clear();
      this.#frameList = [];
      this.#root = newNode();
    }
  }

  /** Stacks held (captured but not dropped). */
  get size(): number {
    return this.#pending.size + this.#resolved.size;
  }
}

/** Stack ids at and above this are native stacks (native/interop/native_stacks.h). */
export const NATIVE_STACK_BIT = 0x80000000;

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
