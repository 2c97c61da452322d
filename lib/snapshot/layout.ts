// Where each field sits in the addon's snapshot records. The positions are the addon's own
// (native/binding/snapshot_records.h, exported by snapshotLayout()), read once at load;
// this file names the fields the decoder reads. An addon whose records name other fields
// (a stale build or prebuild) is refused here with a clear error instead of decoding
// shifted numbers.
import { native } from '../native.js';

const DECODED = {
  segment: ['address', 'total_size', 'allocated_size', 'active_size', 'requested_size', 'stream', 'is_small',
    'is_expandable', 'pool', 'stack', 'first_block', 'block_count'],
  block: ['address', 'size', 'requested_size', 'state', 'stack', 'tag'],
  trace: ['action', 'addr', 'size', 'stream', 'time_us', 'stack', 'tag', 'pool', 'seq'],
} as const;

type RecordKind = keyof typeof DECODED;
/** Each field's offset in its record, and `width`: the record's length. */
export type RecordLayout<K extends RecordKind> = { readonly [F in (typeof DECODED)[K][number]]: number } & {
  readonly width: number;
};

/** @internal The fields the decoder reads, for the test that compares them with the addon's. */
export const decodedFields: { readonly [K in RecordKind]: readonly string[] } = DECODED;

/** @internal Exported for the test that feeds it a stale addon's names. */
export function layoutOf<K extends RecordKind>(kind: K, names: readonly string[]): RecordLayout<K> {
  const want = [...DECODED[kind]].sort().join(',');
  const have = [...names].sort().join(',');
  if (want !== have) {
    const err = new Error(
      `cuda-caching-allocator: the native addon's ${kind} records hold [${names.join(', ')}] but this ` +
        `version reads [${DECODED[kind].join(', ')}]: the addon is from another version. Rebuild it ` +
        '(npm rebuild cuda-caching-allocator).',
    ) as Error & { code: string };
    err.code = 'ERR_CCA_ADDON_MISMATCH';
    throw err;
  }
  const out: Record<string, number> = { width: names.length };
  names.forEach((name, i) => { out[name] = i; });
  return Object.freeze(out) as RecordLayout<K>;
}

const layout = native.snapshotLayout();
export const SEG = layoutOf('segment', layout.segment);
export const BLK = layoutOf('block', layout.block);
export const TRC = layoutOf('trace', layout.trace);
