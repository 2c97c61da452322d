// Builds snapshot dicts from the native parts (fixed-width Float64Array records, each field
// at its offset in records.generated.ts; layout.ts checks the addon writes that layout). memory_snapshot({ includeTraces: false }) reads no trace entry and builds
// no clock converter: its cost depends only on segments and blocks.
import { native } from '../native.js';
import { deviceCount } from '../device.js';
import { CLIENT_TAG_BASE, stacks, tags } from './stack-store.js';
import { capture } from './record.js';
import { annotations } from './annotations.js';
import { hostSnapshot } from './host-history.js';
import { isGraphOwnedPool, poolTupleOf } from '../snapshot/pool-id.js';
import { LazyList } from '../snapshot/lazy-list.js';
import type { JsonBytes } from '../snapshot/json-bytes.js';
import { Blk, Seg, Trc } from '../snapshot/records.generated.js';
import type { Block, BlockState, Frame, Segment, Snapshot, TraceAction, TraceEntry } from '../snapshot/types.js';

const STATES: BlockState[] = ['inactive', 'active_allocated', 'active_pending_free'];
let actions: TraceAction[] | undefined;

// Memory native code allocated (a C ABI client, cuBLAS's workspace) under a name, with no
// stack of its own: one frame naming it, so no viewer reads the block as allocated before the
// history began (memory_viz says so of a block without frames). Native stacks come later.
const nativeFrames = new Map<number, Frame[]>();
function framesOf(stack: number, tag: number): Frame[] {
  if (stack !== 0 || tag < CLIENT_TAG_BASE) return stacks.frames(stack);
  let frames = nativeFrames.get(tag);
  if (frames === undefined) {
    const name = tags.name(tag);
    frames = [{ filename: `<native: ${name}>`, line: 0, name: `allocated by native code (${name}); no native stack recorded`, column: 0 }];
    if (name !== '') nativeFrames.set(tag, frames);
  }
  return frames;
}

function decodeSegments(device: number, segs: Float64Array, blocks: Float64Array, out: Segment[]): void {
  for (let i = 0; i < segs.length; i += Seg.width) {
    const first = segs[i + Seg.first_block]!;
    const count = segs[i + Seg.block_count]!;
    const bl: Block[] = new Array(count);
    for (let j = 0; j < count; j++) {
      const o = (first + j) * Blk.width;
      const tag = blocks[o + Blk.tag]!;
      const b: Block = {
        address: blocks[o + Blk.address]!,
        size: blocks[o + Blk.size]!,
        requested_size: blocks[o + Blk.requested_size]!,
        state: STATES[blocks[o + Blk.state]!]!,
        frames: framesOf(blocks[o + Blk.stack]!, tag),
      };
      if (tag) b.user_metadata = tags.name(tag);
      bl[j] = b;
    }
    out.push({
      device,
      address: segs[i + Seg.address]!,
      total_size: segs[i + Seg.total_size]!,
      allocated_size: segs[i + Seg.allocated_size]!,
      active_size: segs[i + Seg.active_size]!,
      requested_size: segs[i + Seg.requested_size]!,
      stream: segs[i + Seg.stream]!,
      segment_type: segs[i + Seg.is_small] ? 'small' : 'large',
      segment_pool_id: poolTupleOf(segs[i + Seg.pool]!),
      is_expandable: segs[i + Seg.is_expandable] === 1,
      frames: stacks.frames(segs[i + Seg.stack]!),
      blocks: bl,
    });
  }
}

// Entries [start, end) of the native trace records.
export function decodeTraces(t: Float64Array, start = 0, end = t.length / Trc.width): TraceEntry[] {
  actions ??= native.traceActionNames() as TraceAction[];
  const withFrames = capture.level >= 2;
  const out: TraceEntry[] = new Array(end - start);
  for (let i = start * Trc.width, k = 0; k < out.length; i += Trc.width, k++) {
    const action = actions[t[i + Trc.action]!]!;
    const tag = t[i + Trc.tag]!;
    const stack = t[i + Trc.stack]!;
    const size = t[i + Trc.size]!;
    const stream = t[i + Trc.stream]!;
    const time_us = t[i + Trc.time_us]!;
    const user_metadata = tag ? tags.name(tag) : '';
    const pool_id = poolTupleOf(t[i + Trc.pool]!);
    const seq = t[i + Trc.seq]!;
    // Each entry is built in one literal so V8 gives them all one shape.
    const e: TraceEntry = action === 'oom'
      ? { action, device_free: t[i + Trc.addr]!, size, stream, time_us, compile_context: 'N/A', user_metadata, pool_id, seq }
      : { action, addr: t[i + Trc.addr]!, size, stream, time_us, compile_context: 'N/A', user_metadata, pool_id, seq };
    if (withFrames || stack || tag >= CLIENT_TAG_BASE) e.frames = framesOf(stack, tag);
    out[k] = e;
  }
  return out;
}

// The same entries as JSON bytes, straight from the records: what JSON.stringify writes for
// each decodeTraces() object, key for key, comma-separated, without making the objects (a
// JSON dump of a million entries spent most of its time building and then stringifying
// them). Each distinct stack's frames and each tag are encoded once, in `encoded`;
// test/api/snapshot-json.test.ts holds the two forms equal byte for byte.
export interface EncodedText {
  frames: Map<number, Uint8Array>;
  tags: Map<number, Uint8Array>;
}

// The keys and punctuation between an entry's values, encoded once.
const ascii = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const J = {
  size: ascii(',"size":'),
  stream: ascii(',"stream":'),
  time: ascii(',"time_us":'),
  metadata: ascii(',"compile_context":"N/A","user_metadata":'),
  noTag: ascii('""'),
  pool: ascii(',"pool_id":['),
  zeroThen: ascii('0,'),
  thenZero: ascii(',0'),
  seq: ascii('],"seq":'),
  frames: ascii(',"frames":'),
  end: ascii('}'),
  comma: ascii(','),
};
let actionHeads: Uint8Array[] | undefined;  // by action index: '{"action":"alloc","addr":'

export function writeTraceEntriesJson(t: Float64Array, start: number, end: number, encoded: EncodedText, out: JsonBytes): void {
  actions ??= native.traceActionNames() as TraceAction[];
  actionHeads ??= actions.map((a) => ascii(`{"action":${JSON.stringify(a)},${a === 'oom' ? '"device_free"' : '"addr"'}:`));
  const withFrames = capture.level >= 2;
  for (let i = start * Trc.width, k = start; k < end; i += Trc.width, k++) {
    const tag = t[i + Trc.tag]!;
    const stack = t[i + Trc.stack]!;
    if (k !== start) out.bytes(J.comma);
    out.bytes(actionHeads[t[i + Trc.action]!]!);
    out.number(t[i + Trc.addr]!);
    out.bytes(J.size);
    out.number(t[i + Trc.size]!);
    out.bytes(J.stream);
    out.number(t[i + Trc.stream]!);
    out.bytes(J.time);
    out.number(t[i + Trc.time_us]!);
    out.bytes(J.metadata);
    if (tag) {
      let text = encoded.tags.get(tag);
      if (text === undefined) encoded.tags.set(tag, (text = Buffer.from(JSON.stringify(tags.name(tag)), 'utf8')));
      out.bytes(text);
    } else {
      out.bytes(J.noTag);
    }
    out.bytes(J.pool);
    const pool = t[i + Trc.pool]!;
    // (0, n), or (n, 0) for a graph's own pool: the tuple poolTupleOf gives the other paths.
    if (pool !== 0 && isGraphOwnedPool(pool)) {
      out.number(pool);
      out.bytes(J.thenZero);
    } else {
      out.bytes(J.zeroThen);
      out.number(pool);
    }
    out.bytes(J.seq);
    out.number(t[i + Trc.seq]!);
    if (withFrames || stack || tag >= CLIENT_TAG_BASE) {
      out.bytes(J.frames);
      // Native code's frame is keyed by its tag, negated: no stack id is negative.
      const key = stack === 0 && tag >= CLIENT_TAG_BASE ? -tag : stack;
      let frames = encoded.frames.get(key);
      if (frames === undefined) encoded.frames.set(key, (frames = Buffer.from(JSON.stringify(framesOf(stack, tag)), 'utf8')));
      out.bytes(frames);
    }
    out.bytes(J.end);
  }
}

export interface SnapshotOptions {
  /** @internal Traces as lazy lists decoded chunk by chunk (dumps). */
  lazyTraces?: boolean;
  /** Only this MemPool's segments (its id, e.g. [0, 1]); default: every segment. */
  mempoolId?: number[];
  /** Also read the history (the slow part); default true, as in PyTorch. */
  includeTraces?: boolean;
}

function poolFilter(id: number[] | undefined): number {
  return id === undefined ? 0 : id[1] ?? 0;
}

/** The segments of every device (PyTorch's memory_snapshot()). */
export function segmentsOf(options: SnapshotOptions, devices = allDevices()): Segment[] {
  const out: Segment[] = [];
  const pool = poolFilter(options.mempoolId);
  for (const d of devices) {
    const parts = native.snapshot(d, pool, false);
    decodeSegments(d, parts.segments, parts.blocks, out);
  }
  return out;
}

/** The whole dict: segments, device_traces, allocator_settings, external_annotations, and
 *  host_segments, host_traces (pinned host memory's history: empty lists while it is off). */
export function fullSnapshot(options: SnapshotOptions = {}): Snapshot {
  const segments: Segment[] = [];
  const device_traces: TraceEntry[][] = [];
  let maxEntries = 0;
  let overflowed = false;
  const pool = poolFilter(options.mempoolId);
  const includeTraces = options.includeTraces ?? true;
  // A dump symbolizes every stack the allocator still names in one pass, before it copies
  // the history: the captures' call-site records are then garbage before the dump
  // allocates, and V8 collected them during the dump in every run measured, where
  // symbolizing entry by entry as they were written left it to chance (bench/RESULTS.md,
  // 2026-11-26: the peak of a million-entry dump was bimodal).
  if (options.lazyTraces && includeTraces) for (const id of native.referencedStacks()) stacks.frames(id);
  for (const d of allDevices()) {
    const parts = native.snapshot(d, pool, includeTraces);
    decodeSegments(d, parts.segments, parts.blocks, segments);
    const t = parts.traces;
    if (!t) {
      device_traces.push([]);
    } else if (options.lazyTraces) {
      const encoded: EncodedText = { frames: new Map(), tags: new Map() };
      device_traces.push(new LazyList(t.length / Trc.width, (a, b) => decodeTraces(t, a, b),
        (a, b, out) => writeTraceEntriesJson(t, a, b, encoded, out)) as unknown as TraceEntry[]);
    } else {
      device_traces.push(decodeTraces(t));
    }
    maxEntries = Math.max(maxEntries, parts.traceMaxEntries);
    overflowed ||= parts.traceOverflowed;
  }
  return {
    segments,
    device_traces,
    allocator_settings: {
      ...native.allocatorSettings(),
      trace_alloc_max_entries: maxEntries,
      trace_alloc_overflowed: overflowed,
    },
    external_annotations: includeTraces ? annotations() : [],
    ...hostSnapshot(includeTraces),
  };
}

function allDevices(): number[] {
  return Array.from({ length: deviceCount() }, (_, i) => i);
}
