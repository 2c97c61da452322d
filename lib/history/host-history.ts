// Pinned host memory's history, as PyTorch 2.14 writes it (record_pinned_host_memory, PR
// #182407; the layout as read from the PR's source at revision 85be33f2): the snapshot's
// `host_segments` (one segment of one block per pinned block, device -1) and `host_traces`
// (one flat list: segment_alloc, alloc, free_requested, free_completed, segment_free, with
// stream 0 and pool (0, 0)). Both are empty lists while host history is off.
import { native } from '../native.js';
import { stacks } from './stack-store.js';
import { poolTupleOf } from '../snapshot/pool-id.js';
import type { Block, BlockState, Segment, TraceAction, TraceEntry } from '../snapshot/types.js';

const BLOCK_FIELDS = 4;  // address, size, state, stack (host_history_functions.cpp)
const TRACE_FIELDS = 5;  // action, addr, size, time_us, stack
const STATES: BlockState[] = ['inactive', 'active_allocated', 'active_pending_free'];

/** What HostBuffer reads: 0 off, else the context level (1 state, 2 alloc, 3 all). */
export const hostCapture = { level: 0, enabled: false };

let actionNames: TraceAction[] | undefined;

/** Starts, changes or stops host history (the JS side's state and the native ring). */
export function setHostHistory(enabled: boolean, level: number, maxEntries: number, clear: boolean): void {
  native.hostSetHistory(enabled, enabled ? level : 0, maxEntries, clear);
  hostCapture.enabled = enabled;
  hostCapture.level = enabled ? level : 0;
}

/** @internal The runtime was replaced (cuda.sim.configure/isolate): its host history starts off. */
export function forgetHostHistorySettings(): void {
  hostCapture.enabled = false;
  hostCapture.level = 0;
}

/** The snapshot's host keys; without traces, host_traces is empty (nothing of the ring is read). */
export function hostSnapshot(includeTraces: boolean): { host_segments: Segment[]; host_traces: TraceEntry[] } {
  if (!hostCapture.enabled) return { host_segments: [], host_traces: [] };
  const parts = native.hostHistory(includeTraces);
  if (parts === null) return { host_segments: [], host_traces: [] };
  return { host_segments: hostSegments(parts.blocks), host_traces: parts.traces ? hostTraces(parts.traces) : [] };
}

function hostSegments(b: Float64Array): Segment[] {
  const out: Segment[] = new Array(b.length / BLOCK_FIELDS);
  for (let i = 0, k = 0; i < b.length; i += BLOCK_FIELDS, k++) {
    const address = b[i]!;
    const size = b[i + 1]!;
    const state = STATES[b[i + 2]!]!;
    const block: Block = { address, size, requested_size: size, state, frames: stacks.frames(b[i + 3]!) };
    out[k] = {
      device: -1,
      address,
      total_size: size,
      allocated_size: state === 'active_allocated' ? size : 0,
      active_size: state === 'inactive' ? 0 : size,
      requested_size: 0,
      stream: 0,
      segment_type: 'small',
      segment_pool_id: poolTupleOf(0),
      is_expandable: false,
      frames: [],
      blocks: [block],
    };
  }
  return out;
}

function hostTraces(t: Float64Array): TraceEntry[] {
  actionNames ??= native.hostTraceActionNames() as TraceAction[];
  const out: TraceEntry[] = new Array(t.length / TRACE_FIELDS);
  for (let i = 0, k = 0; i < t.length; i += TRACE_FIELDS, k++) {
    // PyTorch's key order for a host entry; frames only where a stack was kept.
    const e: TraceEntry = {
      action: actionNames[t[i]!]!, addr: t[i + 1]!, size: t[i + 2]!, stream: 0, compile_context: '', user_metadata: '',
      time_us: t[i + 3]!, pool_id: poolTupleOf(0),
    };
    const stack = t[i + 4]!;
    if (stack !== 0) e.frames = stacks.frames(stack);
    out[k] = e;
  }
  return out;
}
