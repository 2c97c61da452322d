// Where each field sits in the addon's snapshot records. The layout is described once, in
// native/binding/snapshot_records.h; records.generated.ts is made from it (the offsets as
// const enums, which tsc compiles to plain numbers), and test/api/snapshot-layout.test.ts fails
// when the two differ. When the addon loads (native.ts) its own list (snapshotLayout()) is
// compared with the generated one: an addon from another version (a stale build or prebuild)
// is refused with a clear error instead of decoding shifted numbers.
import { AllocatorError } from '../errors.js';
import { BLOCK_FIELDS, SEGMENT_FIELDS, TRACE_FIELDS } from './records.generated.js';

/** @internal Each record's fields in order, as this version decodes them. */
export const decodedFields = { segment: SEGMENT_FIELDS, block: BLOCK_FIELDS, trace: TRACE_FIELDS } as const;
type RecordKind = keyof typeof decodedFields;

/** @internal Throws ERR_CCA_ADDON_MISMATCH unless the addon's `kind` records are `names`, in order. */
export function checkLayout(kind: RecordKind, names: readonly string[]): void {
  const want = decodedFields[kind];
  if (names.length === want.length && names.every((n, i) => n === want[i])) return;
  throw new AllocatorError(
    `cuda-caching-allocator: the native addon's ${kind} records hold [${names.join(', ')}] but this ` +
      `version reads [${want.join(', ')}]: the addon is from another version. Rebuild it ` +
      '(npm rebuild cuda-caching-allocator).',
    'ERR_CCA_ADDON_MISMATCH',
  );
}

/** @internal native.ts, as the addon loads: refuses an addon whose records differ from ours. */
export function checkAddonLayout(addon: { snapshotLayout(): { segment: string[]; block: string[]; trace: string[] } }): void {
  const layout = addon.snapshotLayout();
  checkLayout('segment', layout.segment);
  checkLayout('block', layout.block);
  checkLayout('trace', layout.trace);
}
