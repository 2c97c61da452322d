// Files a user names. Only regular files are read or written: a FIFO, a socket or a
// device is refused before it is opened, because open() on a FIFO waits for the other
// end, and a device may never end (/dev/zero) or act on being opened. Opens carry
// O_NONBLOCK as well, so a file swapped for a FIFO between the check and the open fails
// at once instead of hanging. Writes go through a temporary file renamed at the end, so
// a reader never sees half a file and a failure leaves nothing behind.
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, statSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { SnapshotFileError } from './errors.js';
import type { ByteSink } from './snapshot/sink.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NONBLOCK | constants.O_NOCTTY;

function kindOf(st: Stats): string {
  return st.isDirectory() ? 'a directory' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device'
    : st.isFIFO() ? 'a pipe (FIFO)' : st.isSocket() ? 'a socket' : 'not a regular file';
}

function notAFile(path: string, st: Stats, what: string): SnapshotFileError {
  return new SnapshotFileError(`${path} is ${kindOf(st)}, not a regular file; ${what}`, 'ERR_CCA_NOT_A_FILE', path);
}

function readError(path: string, e: NodeJS.ErrnoException): SnapshotFileError {
  if (e.code === 'ENOENT') {
    return new SnapshotFileError(`${path}: no such file; check the path (relative paths start at ${process.cwd()})`,
      'ERR_CCA_FILE_NOT_FOUND', path, e.code);
  }
  return new SnapshotFileError(`cannot read ${path}: ${e.message}`, 'ERR_CCA_FILE_UNREADABLE', path, e.code);
}

/** A coded error for a file that could not be written (ERR_CCA_FILE_UNWRITABLE). */
export function unwritable(path: string, e: NodeJS.ErrnoException): SnapshotFileError {
  const why = e.code === 'ENOENT' ? 'its folder does not exist' : e.code === 'EACCES' ? 'permission denied'
    : e.code === 'EISDIR' ? 'it is a directory' : e.message;
  return new SnapshotFileError(`cannot write ${path}: ${why}`, 'ERR_CCA_FILE_UNWRITABLE', path, e.code);
}

/**
 * The bytes of the regular file at `path`, at most `maxBytes` of them (ERR_CCA_FILE_TOO_LARGE
 * above; the message names `limitHint`, how to raise the limit).
 */
export function readRegularFile(path: string, maxBytes: number, limitHint: string): Buffer {
  const what = 'name a .pickle or .json snapshot file';
  let fd: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw notAFile(path, st, what);
    fd = openSync(path, READ_FLAGS);
  } catch (e) {
    if (e instanceof SnapshotFileError) throw e;
    throw readError(path, e as NodeJS.ErrnoException);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notAFile(path, st, what);  // replaced since the check
    if (st.size > maxBytes) {
      throw new SnapshotFileError(`${path} holds ${st.size} bytes, more than the limit of ${maxBytes}; ` +
        `raise it with ${limitHint} if the file is really a snapshot`, 'ERR_CCA_FILE_TOO_LARGE', path);
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
    throw readError(path, e as NodeJS.ErrnoException);
  } finally {
    closeSync(fd);
  }
}

/**
 * Standard input to its end, at most `maxBytes` of it (ERR_CCA_FILE_TOO_LARGE above), for
 * `cca <command> -` (as PyTorch's _memory_viz reads `-`). A pipe, a file or a terminal
 * (read until end of file, Ctrl-D); a descriptor opened non-blocking is waited on.
 */
export function readStandardInput(maxBytes: number, limitHint: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  const wait = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const chunk = Buffer.allocUnsafe(1 << 20);
    let n: number;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') {
        Atomics.wait(wait, 0, 0, 5);
        continue;
      }
      throw readError('standard input', e as NodeJS.ErrnoException);
    }
    if (n === 0) break;
    total += n;
    if (total > maxBytes) {
      throw new SnapshotFileError(`standard input holds more than the limit of ${maxBytes} bytes; ` +
        `raise it with ${limitHint} if it is really a snapshot`, 'ERR_CCA_FILE_TOO_LARGE', '-');
    }
    chunks.push(chunk.subarray(0, n));
  }
  return Buffer.concat(chunks, total);
}

/**
 * Writes the file at `path` through `fill`, replacing a regular file there. Refuses a
 * target that exists and is not a regular file (ERR_CCA_NOT_A_FILE); a failure to create
 * or rename is ERR_CCA_FILE_UNWRITABLE; whatever fails, nothing is left behind.
 * `onProgress` hears the bytes written so far after each write.
 */
export function replaceFile(path: string, fill: (out: ByteSink) => void, onProgress?: (bytes: number) => void): number {
  let existing: Stats | undefined;
  try {
    existing = statSync(path, { throwIfNoEntry: false });
  } catch {
    existing = undefined;  // unreadable folder: the open below says why
  }
  if (existing && !existing.isFile()) throw notAFile(path, existing, 'name a file to write');
  const tmp = `${path}.tmp-${process.pid}`;
  let fd: number;
  try {
    fd = openSync(tmp, WRITE_FLAGS, 0o666);
  } catch (e) {
    throw unwritable(path, e as NodeJS.ErrnoException);
  }
  const out = {
    bytesWritten: 0,
    write(bytes: Uint8Array): void {
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      this.bytesWritten += bytes.length;
      onProgress?.(this.bytesWritten);
    },
  };
  let done = false;
  try {
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw notAFile(tmp, st, 'remove it and write again');
      fill(out);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(tmp, path);
    } catch (e) {
      throw unwritable(path, e as NodeJS.ErrnoException);
    }
    done = true;
  } finally {
    if (!done) {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
    }
  }
  return out.bytesWritten;
}
