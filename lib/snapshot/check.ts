// The one place a snapshot's structure is checked: at load (loadSnapshot, parseSnapshot)
// and when an analysis is handed an object it has not seen. Past this point every command
// and analysis trusts the fields it reads. A problem is one CorruptSnapshotError naming the
// field's path: `segments[3].blocks[0].size: expected an integer, got "x"`.
//
// Fields PyTorch always writes (and our analyses read) are required; others are checked
// only when present, since older PyTorch versions omit them. Linear in the snapshot's size:
// PyTorch shares one frames list among many entries (memoized in the pickle), and a shared
// list is checked once.
import { CorruptSnapshotError } from '../errors.js';
import { describe } from '../validate.js';
import type { Annotation, Frame, Segment, Snapshot } from './types.js';

const BLOCK_STATES = new Set(['active_allocated', 'active_pending_free', 'inactive']);
const SEGMENT_TYPES = new Set(['small', 'large']);
const STAGES = new Set(['START', 'END']);

type Obj = Record<string, unknown>;

class Checker {
  private readonly framesSeen = new WeakSet<object>();
  constructor(private readonly source: string) {}

  fail(path: string, what: string, got: unknown): never {
    const shown = typeof got === 'bigint' ? `${got} (beyond 2^53)` : describe(got);
    const where = this.source ? `${this.source}: ${path}` : path;
    throw new CorruptSnapshotError(`${where}: expected ${what}, got ${shown}`, undefined, path);
  }

  object(v: unknown, path: string, what = 'a dict'): Obj {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) this.fail(path, what, v);
    return v as Obj;
  }

  list(v: unknown, path: string): unknown[] {
    if (!Array.isArray(v)) this.fail(path, 'a list', v);
    return v as unknown[];
  }

  /** A safe integer >= min. */
  int(o: Obj, key: string, path: string, min = 0): void {
    const v = o[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
      this.fail(`${path}.${key}`, min === 0 ? 'a non-negative integer' : 'an integer', v);
    }
  }

  optInt(o: Obj, key: string, path: string, min = 0): void {
    if (o[key] !== undefined && o[key] !== null) this.int(o, key, path, min);
  }

  str(o: Obj, key: string, path: string): void {
    if (typeof o[key] !== 'string') this.fail(`${path}.${key}`, 'a string', o[key]);
  }

  finite(o: Obj, key: string, path: string): void {
    if (typeof o[key] !== 'number' || !Number.isFinite(o[key])) this.fail(`${path}.${key}`, 'a finite number', o[key]);
  }

  optStr(o: Obj, key: string, path: string): void {
    if (o[key] !== undefined && o[key] !== null) this.str(o, key, path);
  }

  oneOf(o: Obj, key: string, path: string, allowed: Set<string>): void {
    if (typeof o[key] !== 'string' || !allowed.has(o[key] as string)) {
      this.fail(`${path}.${key}`, `one of ${[...allowed].map((s) => JSON.stringify(s)).join(', ')}`, o[key]);
    }
  }

  optBool(o: Obj, key: string, path: string): void {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') this.fail(`${path}.${key}`, 'a boolean', o[key]);
  }

  optPoolId(o: Obj, key: string, path: string): void {
    const v = o[key];
    if (v === undefined || v === null) return;
    if (!Array.isArray(v) || v.length !== 2 || !v.every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0)) {
      this.fail(`${path}.${key}`, 'a pair of non-negative integers (a, b)', v);
    }
  }

  optFrames(o: Obj, key: string, path: string): void {
    const v = o[key];
    if (v !== undefined && v !== null) this.frames(v, `${path}.${key}`);
  }

  frames(v: unknown, path: string): void {
    const frames = this.list(v, path);
    if (this.framesSeen.has(frames)) return;
    for (let i = 0; i < frames.length; i++) {
      const p = `${path}[${i}]`;
      const f = this.object(frames[i], p, 'a frame {filename, line, name}');
      this.str(f, 'filename', p);
      this.str(f, 'name', p);
      this.int(f, 'line', p, Number.MIN_SAFE_INTEGER);
    }
    this.framesSeen.add(frames);
  }

  /** `host`: a host segment, whose device PyTorch writes as -1. */
  segment(v: unknown, path: string, host = false): void {
    const s = this.object(v, path);
    if (host && s.device !== -1) this.fail(`${path}.device`, '-1 (a host segment)', s.device);
    else if (!host) this.int(s, 'device', path);
    this.extent(s, path);
    this.int(s, 'stream', path);
    this.oneOf(s, 'segment_type', path, SEGMENT_TYPES);
    this.optInt(s, 'allocated_size', path);
    this.optInt(s, 'active_size', path);
    this.optInt(s, 'requested_size', path);
    this.optPoolId(s, 'segment_pool_id', path);
    this.optBool(s, 'is_expandable', path);
    this.optFrames(s, 'frames', path);
  }

  /** What a block map draws: the segment's address, size and blocks. */
  extent(s: Obj, path: string): void {
    this.int(s, 'address', path);
    this.int(s, 'total_size', path);
    const blocks = this.list(s.blocks, `${path}.blocks`);
    for (let i = 0; i < blocks.length; i++) {
      const p = `${path}.blocks[${i}]`;
      const b = this.object(blocks[i], p);
      this.int(b, 'address', p);
      this.int(b, 'size', p);
      this.oneOf(b, 'state', p, BLOCK_STATES);
      this.optInt(b, 'requested_size', p);
      this.optFrames(b, 'frames', p);
      this.optStr(b, 'user_metadata', p);
    }
  }

  traceEntry(v: unknown, path: string): void {
    const e = this.object(v, path);
    this.str(e, 'action', path);
    this.int(e, 'size', path);
    this.int(e, 'stream', path);
    this.finite(e, 'time_us', path);
    // PyTorch writes no addr for an oom (device_free instead); every other action has one.
    if (e.action === 'oom') this.optInt(e, 'device_free', path);
    else this.int(e, 'addr', path);
    this.optInt(e, 'seq', path);
    this.optStr(e, 'user_metadata', path);
    this.optStr(e, 'compile_context', path);
    this.optPoolId(e, 'pool_id', path);
    this.optFrames(e, 'frames', path);
  }

  annotation(v: unknown, path: string): void {
    const a = this.object(v, path);
    this.int(a, 'device', path);
    this.str(a, 'name', path);
    this.oneOf(a, 'stage', path, STAGES);
    this.finite(a, 'time_us', path);
    this.optInt(a, 'seq', path);
  }

  snapshot(v: unknown): Snapshot {
    // Old PyTorch (memory_snapshot()) wrote the bare list of segments.
    const top: Obj = Array.isArray(v) ? { segments: v, device_traces: [] } : this.object(v, '(top level)', 'a snapshot dict');
    if (top.segments === undefined) this.fail('segments', 'a list of segments (is this a memory snapshot?)', undefined);
    const segments = this.list(top.segments, 'segments');
    for (let i = 0; i < segments.length; i++) this.segment(segments[i], `segments[${i}]`);
    // Old PyTorch files have no device_traces; null is not a list.
    const traces = this.list(top.device_traces === undefined ? [] : top.device_traces, 'device_traces');
    for (let d = 0; d < traces.length; d++) {
      const list = this.list(traces[d], `device_traces[${d}]`);
      for (let i = 0; i < list.length; i++) this.traceEntry(list[i], `device_traces[${d}][${i}]`);
    }
    if (top.external_annotations !== undefined && top.external_annotations !== null) {
      const notes = this.list(top.external_annotations, 'external_annotations');
      for (let i = 0; i < notes.length; i++) this.annotation(notes[i], `external_annotations[${i}]`);
    }
    // PyTorch 2.14 writes both host keys always (empty lists while host history is off).
    if (top.host_segments !== undefined && top.host_segments !== null) {
      const host = this.list(top.host_segments, 'host_segments');
      for (let i = 0; i < host.length; i++) this.segment(host[i], `host_segments[${i}]`, true);
    }
    if (top.host_traces !== undefined && top.host_traces !== null) {
      const list = this.list(top.host_traces, 'host_traces');
      for (let i = 0; i < list.length; i++) this.traceEntry(list[i], `host_traces[${i}]`);
    }
    if (top.allocator_settings !== undefined && top.allocator_settings !== null) {
      this.object(top.allocator_settings, 'allocator_settings');
    }
    if (Array.isArray(v) || top.device_traces === undefined) return { ...top, device_traces: traces } as unknown as Snapshot;
    return top as unknown as Snapshot;
  }
}

const checked = new WeakSet<object>();

/**
 * Checks that `value` has a snapshot's structure and returns it typed. Throws a
 * CorruptSnapshotError (`ERR_CCA_CORRUPT_SNAPSHOT`) naming the first bad field's path.
 * `source` (a file name) starts the message.
 */
export function checkSnapshot(value: unknown, source = 'snapshot'): Snapshot {
  const s = new Checker(source).snapshot(value);
  checked.add(s);
  return s;
}

/** Checks a segment's address, total_size and blocks (what blockMap draws). */
export function checkSegmentExtent(value: unknown, name = 'segment'): Segment {
  const c = new Checker('');
  c.extent(c.object(value, name), name);
  return value as Segment;
}

/** Checks a list of frames {filename, line, name}. */
export function checkFrames(value: unknown, name = 'frames'): Frame[] {
  new Checker('').frames(value, name);
  return value as Frame[];
}

/** Checks a list of annotations {device, name, stage, time_us[, seq]}. */
export function checkAnnotations(value: unknown, name = 'annotations'): Annotation[] {
  const c = new Checker('');
  const list = c.list(value, name);
  for (let i = 0; i < list.length; i++) c.annotation(list[i], `${name}[${i}]`);
  return list as Annotation[];
}

/** Marks a snapshot this library built itself (memory._snapshot()) as checked. @internal */
export function markChecked(s: Snapshot): Snapshot {
  checked.add(s);
  return s;
}

/**
 * For the analyses: a snapshot checked once (by loadSnapshot, memory._snapshot() or an
 * earlier call) passes at once; anything else is checked now. `name` is the parameter's.
 */
export function snapshotArg(value: unknown, name = 'snapshot'): Snapshot {
  if (value !== null && typeof value === 'object' && checked.has(value)) return value as Snapshot;
  return checkSnapshot(value, name);
}
