// Generated from native/binding/snapshot_records.h by scripts/gen-snapshot-records.mjs: do not
// edit; run `node scripts/gen-snapshot-records.mjs` after changing the header.

export const SEGMENT_FIELDS = ['address', 'total_size', 'allocated_size', 'active_size', 'requested_size', 'stream', 'is_small', 'is_expandable', 'pool', 'stack', 'first_block', 'block_count'] as const;
export const enum Seg {
  address = 0,
  total_size = 1,
  allocated_size = 2,
  active_size = 3,
  requested_size = 4,
  stream = 5,
  is_small = 6,
  is_expandable = 7,
  pool = 8,
  stack = 9,
  first_block = 10,
  block_count = 11,
  width = 12,
}

export const BLOCK_FIELDS = ['address', 'size', 'requested_size', 'state', 'stack', 'tag'] as const;
export const enum Blk {
  address = 0,
  size = 1,
  requested_size = 2,
  state = 3,
  stack = 4,
  tag = 5,
  width = 6,
}

export const TRACE_FIELDS = ['action', 'addr', 'size', 'stream', 'time_us', 'stack', 'tag', 'pool', 'seq'] as const;
export const enum Trc {
  action = 0,
  addr = 1,
  size = 2,
  stream = 3,
  time_us = 4,
  stack = 5,
  tag = 6,
  pool = 7,
  seq = 8,
  width = 9,
}
