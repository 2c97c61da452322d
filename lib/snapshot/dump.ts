// Writing snapshots to files: `.json` as JSON, anything else as a pickle memory_viz opens.
// Encoding streams to the file in chunks, so memory stays bounded by the dict itself; a
// progress bar shows on a TTY for big dumps.
import { renameSync, statSync, unlinkSync } from 'node:fs';
import { SnapshotFileError } from '../errors.js';
import { checkBoolean, checkString, typeError } from '../validate.js';
import cliProgress from 'cli-progress';
import { writePickle } from './pickle-writer.js';
import { writeJson } from './json-writer.js';
import { FileSink, MemorySink, type ByteSink } from './sink.js';
import type { Snapshot } from './types.js';
import { snapshotArg } from './check.js';

export type SnapshotFormat = 'pickle' | 'json';

export function formatFor(path: string): SnapshotFormat {
  return path.toLowerCase().endsWith('.json') ? 'json' : 'pickle';
}

function checkFormat(format: unknown, name = 'format'): SnapshotFormat {
  if (format !== 'pickle' && format !== 'json') throw typeError("'pickle' or 'json'", name, format);
  return format;
}

/** A snapshot as file bytes (pickle memory_viz opens, or JSON); the snapshot is checked first. */
export function encodeSnapshot(snapshot: unknown, format: SnapshotFormat = 'pickle'): Buffer {
  checkFormat(format);
  snapshotArg(snapshot);
  const sink = new MemorySink();
  encodeTo(snapshot, format, sink);
  return sink.bytes();
}

function encodeTo(snapshot: unknown, format: SnapshotFormat, sink: ByteSink): void {
  if (format === 'json') writeJson(snapshot, sink);
  else writePickle(snapshot, sink);
}

function entryCount(snapshot: unknown): number {
  const traces = (snapshot as Snapshot | undefined)?.device_traces;
  return Array.isArray(traces) ? traces.reduce((n, t) => n + ((t as { length?: number })?.length ?? 0), 0) : 0;
}

export interface WriteResult {
  path: string;
  format: SnapshotFormat;
  bytes: number;
}

/**
 * Writes `snapshot` to `path` (through a temporary file renamed at the end, so a reader
 * never sees half a file). Shows a progress bar on a TTY when there are many entries.
 */
export function writeSnapshotFile(snapshot: unknown, path: string, format?: SnapshotFormat, progress?: boolean): WriteResult {
  checkString('path', path);
  if (path === '') throw new SnapshotFileError('the snapshot file name is empty; name a .pickle or .json file', 'ERR_CCA_FILE_UNWRITABLE', path);
  format = format === undefined ? formatFor(path) : checkFormat(format);
  if (progress !== undefined) checkBoolean('progress', progress);
  let existing;
  try {
    existing = statSync(path, { throwIfNoEntry: false });
  } catch {
    existing = undefined;
  }
  if (existing && !existing.isFile()) {
    throw new SnapshotFileError(`${path} exists and is not a regular file (a directory?); name a file to write`,
      'ERR_CCA_NOT_A_FILE', path);
  }
  const showBar = progress ?? (process.stderr.isTTY === true && entryCount(snapshot) >= 50_000);
  // Bytes are not known ahead: the bar counts MiB written against an estimate of ~120 B/entry.
  const estimate = Math.max(1, Math.round((entryCount(snapshot) * 120) / 2 ** 20));
  const bar = showBar
    ? new cliProgress.SingleBar({ format: `writing ${path} [{bar}] {value}/{total} MiB`, stream: process.stderr }, cliProgress.Presets.shades_classic)
    : undefined;
  bar?.start(estimate, 0);
  const tmp = `${path}.tmp-${process.pid}`;
  let sink: FileSink;
  try {
    sink = new FileSink(tmp, bar ? (b) => bar.update(Math.min(estimate, Math.round(b / 2 ** 20))) : undefined);
  } catch (e) {
    bar?.stop();
    throw unwritable(path, e as NodeJS.ErrnoException);
  }
  let done = false;
  try {
    try {
      encodeTo(snapshot, format, sink);
    } finally {
      sink.close();
      bar?.update(estimate);
      bar?.stop();
    }
    try {
      renameSync(tmp, path);
    } catch (e) {
      throw unwritable(path, e as NodeJS.ErrnoException);
    }
    done = true;
  } finally {
    // A failed dump leaves nothing behind: neither half a file nor the temporary one.
    if (!done) {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
    }
  }
  return { path, format, bytes: sink.bytesWritten };
}

/** A coded error for a file that could not be written (ERR_CCA_FILE_UNWRITABLE). */
export function unwritable(path: string, e: NodeJS.ErrnoException): SnapshotFileError {
  const why = e.code === 'ENOENT' ? 'its folder does not exist' : e.code === 'EACCES' ? 'permission denied'
    : e.code === 'EISDIR' ? 'it is a directory' : e.message;
  return new SnapshotFileError(`cannot write ${path}: ${why}`, 'ERR_CCA_FILE_UNWRITABLE', path, e.code);
}
