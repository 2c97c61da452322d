// Reading snapshot files, ours or PyTorch's, pickle or JSON (told apart by their first
// byte). The structure is checked once, here (check.ts); a bare list of segments (old
// PyTorch) becomes { segments, device_traces: [] }.
import { CorruptSnapshotError, SnapshotFileError } from '../errors.js';
import { readRegularFile } from '../files.js';
import { checkInteger, checkOptions, checkString, typeError } from '../validate.js';
import { checkSnapshot } from './check.js';
import { readPickle } from './pickle-reader.js';
import type { Snapshot } from './types.js';
import { asTuple } from './tuple.js';

/** loadSnapshot's default size limit: 2 GiB (a million-entry history pickles to ~100 MiB). */
export const DEFAULT_MAX_SNAPSHOT_BYTES = 2 * 2 ** 30;

export function parseSnapshot(bytes: Uint8Array, source = 'snapshot'): Snapshot {
  if (!(bytes instanceof Uint8Array)) throw typeError('a Buffer or Uint8Array', 'bytes', bytes);
  checkString('source', source);
  if (bytes.length === 0) throw new CorruptSnapshotError(`${source} is empty`, 0);
  let value: unknown;
  if (bytes[0] === 0x80) {
    value = readPickle(bytes);
  } else {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8').trimStart();
    if (text[0] !== '{' && text[0] !== '[') {
      throw new CorruptSnapshotError(`${source} is neither a pickle nor JSON (first byte 0x${bytes[0]!.toString(16)})`, 0);
    }
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new CorruptSnapshotError(`${source} is not valid JSON: ${(e as Error).message}`);
    }
  }
  const snap = checkSnapshot(value, source);
  if (bytes[0] !== 0x80) restoreTuples(snap);
  return snap;
}

// JSON has no tuples: PyTorch's (a, b) pool ids come back as arrays, branded again here so
// a pickle written from JSON holds the tuples PyTorch's did.
function restoreTuples(snap: Snapshot): void {
  for (const segment of snap.segments) {
    if (Array.isArray(segment.segment_pool_id)) asTuple(segment.segment_pool_id);
  }
  for (const device of snap.device_traces ?? []) {
    for (const entry of device) {
      const id = (entry as { pool_id?: unknown }).pool_id;
      if (Array.isArray(id)) asTuple(id);
    }
  }
}

export interface LoadOptions {
  /** Refuse files larger than this many bytes (default 2 GiB). */
  maxBytes?: number;
}

/**
 * Reads a snapshot file (pickle or JSON), ours or PyTorch's. Only regular files are read
 * (a device such as /dev/zero, a FIFO, a socket or a directory is refused before it is
 * opened, so nothing here waits on another process), up to
 * `maxBytes`. Errors: SnapshotFileError (ERR_CCA_FILE_NOT_FOUND, ERR_CCA_NOT_A_FILE,
 * ERR_CCA_FILE_TOO_LARGE, ERR_CCA_FILE_UNREADABLE) and CorruptSnapshotError.
 */
export function loadSnapshot(path: string, options?: LoadOptions): Snapshot {
  // A number would be taken by fs as a file descriptor (0 is stdin, and blocks).
  checkString('path', path);
  if (path === '') throw new SnapshotFileError('path is empty: name a snapshot file', 'ERR_CCA_FILE_NOT_FOUND', path, 'ENOENT');
  const o = checkOptions<LoadOptions>('loadSnapshot options', options, ['maxBytes']);
  const maxBytes = o.maxBytes === undefined ? DEFAULT_MAX_SNAPSHOT_BYTES : checkInteger('options.maxBytes', o.maxBytes, 1, 2 ** 53 - 1);
  return parseSnapshot(readRegularFile(path, maxBytes, 'loadSnapshot(path, { maxBytes }) (cca: --max-bytes)'), path);
}
