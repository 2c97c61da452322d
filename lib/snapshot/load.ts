// Reading snapshot files, ours or PyTorch's, pickle or JSON (told apart by their first
// byte). The structure is checked once, here (check.ts); a bare list of segments (old
// PyTorch) becomes { segments, device_traces: [] }.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CorruptSnapshotError, SnapshotFileError } from '../errors.js';
import { checkInteger, checkOptions, checkString, typeError } from '../validate.js';
import { checkSnapshot } from './check.js';
import { readPickle } from './pickle-reader.js';
import type { Snapshot } from './types.js';

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
  return checkSnapshot(value, source);
}

export interface LoadOptions {
  /** Refuse files larger than this many bytes (default 2 GiB). */
  maxBytes?: number;
}

/**
 * Reads a snapshot file (pickle or JSON), ours or PyTorch's. Only regular files are read
 * (a device such as /dev/zero, a pipe or a directory is refused at once), up to
 * `maxBytes`. Errors: SnapshotFileError (ERR_CCA_FILE_NOT_FOUND, ERR_CCA_NOT_A_FILE,
 * ERR_CCA_FILE_TOO_LARGE, ERR_CCA_FILE_UNREADABLE) and CorruptSnapshotError.
 */
export function loadSnapshot(path: string, options?: LoadOptions): Snapshot {
  // A number would be taken by fs as a file descriptor (0 is stdin, and blocks).
  checkString('path', path);
  if (path === '') throw new SnapshotFileError('path is empty: name a snapshot file', 'ERR_CCA_FILE_NOT_FOUND', path, 'ENOENT');
  const o = checkOptions<LoadOptions>('loadSnapshot options', options, ['maxBytes']);
  const maxBytes = o.maxBytes === undefined ? DEFAULT_MAX_SNAPSHOT_BYTES : checkInteger('options.maxBytes', o.maxBytes, 1, 2 ** 53 - 1);
  return parseSnapshot(readRegularFile(path, maxBytes), path);
}

function readRegularFile(path: string, maxBytes: number): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw fileError(path, e as NodeJS.ErrnoException);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isDirectory() ? 'a directory' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' :
        st.isFIFO() ? 'a pipe' : st.isSocket() ? 'a socket' : 'not a regular file';
      throw new SnapshotFileError(`${path} is ${kind}, not a snapshot file; name a .pickle or .json file`,
        'ERR_CCA_NOT_A_FILE', path);
    }
    if (st.size > maxBytes) {
      throw new SnapshotFileError(`${path} holds ${st.size} bytes, more than the limit of ${maxBytes}; ` +
        'raise it with loadSnapshot(path, { maxBytes }) (cca: --max-bytes) if the file is really a snapshot',
        'ERR_CCA_FILE_TOO_LARGE', path);
    }
    // Exactly the size fstat saw: a file that grows while read does not make us read more.
    const out = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < out.length) {
      const n = readSync(fd, out, got, out.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return got === out.length ? out : out.subarray(0, got);
  } catch (e) {
    if (e instanceof SnapshotFileError) throw e;
    throw fileError(path, e as NodeJS.ErrnoException);
  } finally {
    closeSync(fd);
  }
}

function fileError(path: string, e: NodeJS.ErrnoException): SnapshotFileError {
  if (e.code === 'ENOENT') {
    return new SnapshotFileError(`${path}: no such file; check the path (relative paths start at ${process.cwd()})`,
      'ERR_CCA_FILE_NOT_FOUND', path, e.code);
  }
  if (e.code === 'EISDIR') return new SnapshotFileError(`${path} is a directory, not a snapshot file`, 'ERR_CCA_NOT_A_FILE', path, e.code);
  return new SnapshotFileError(`cannot read ${path}: ${e.message}`, 'ERR_CCA_FILE_UNREADABLE', path, e.code);
}
