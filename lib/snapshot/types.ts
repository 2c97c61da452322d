// The snapshot dict, in PyTorch's shape (torch.cuda.memory._snapshot()), so memory_viz and
// Python tooling read our files and we read theirs.

/** One stack frame, as PyTorch's snapshots write it. */
export interface Frame {
  filename: string;
  line: number;
  name: string;
  column: number;
}

export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

export interface Block {
  address: number;
  size: number;
  /** The caller's size; kept after free; 0 for a remainder never handed out. */
  requested_size: number;
  state: BlockState;
  frames: Frame[];
  /** The allocation's tag (ours; PyTorch blocks have none). */
  user_metadata?: string;
}

export interface Segment {
  device: number;
  address: number;
  total_size: number;
  allocated_size: number;
  active_size: number;
  requested_size: number;
  stream: number;
  segment_type: 'small' | 'large';
  /** A Python tuple (a, b) in pickles. */
  segment_pool_id: number[];
  is_expandable: boolean;
  frames: Frame[];
  blocks: Block[];
}

export type TraceAction =
  | 'alloc' | 'free_requested' | 'free_completed' | 'segment_alloc' | 'segment_free'
  | 'segment_map' | 'segment_unmap' | 'snapshot' | 'oom'
  /** Metadata attached to a live allocation after the fact (_annotate_memory), in user_metadata. */
  | 'annotate';

export interface TraceEntry {
  action: TraceAction;
  /** Absent for 'oom', which has device_free instead. */
  addr?: number;
  device_free?: number;
  size: number;
  stream: number;
  time_us: number;
  compile_context: string;
  user_metadata: string;
  pool_id?: number[];
  /** Present when history keeps stacks on trace entries (context 'alloc' or 'all'). */
  frames?: Frame[];
  /** Ours (PyTorch's files have none): the event's place in its device's history, from the
   *  counter annotations draw on too. Unique where time_us ties; see analysis/order.ts. */
  seq?: number;
}

export interface Annotation {
  device: number;
  name: string;
  stage: 'START' | 'END';
  time_us: number;
  /** Ours: the place in the device's history, comparable with trace entries' seq. */
  seq?: number;
}

export interface Snapshot {
  segments: Segment[];
  device_traces: TraceEntry[][];
  allocator_settings?: Record<string, unknown>;
  external_annotations?: Annotation[];
  /** Pinned host memory (PyTorch 2.14's record_pinned_host_memory): one segment of one
   *  block per pinned block, device -1. Empty while host history is off; absent in older files. */
  host_segments?: Segment[];
  /** Pinned host memory's history, one list (stream 0, pool (0, 0), no seq). */
  host_traces?: TraceEntry[];
}
