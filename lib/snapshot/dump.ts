// Writing snapshots to files: `.json` as JSON, anything else as a pickle memory_viz opens.
// Encoding streams to the file in chunks, so memory stays bounded by the dict itself; a
// progress bar shows on a TTY for big dumps.
import { SnapshotFileError } from '../errors.js';
import { replaceFile } from '../files.js';
import { checkBoolean, checkString, typeError } from '../validate.js';
import cliProgress from 'cli-progress';
import { writePickle } from './pickle-writer.js';
import { writeJson } from './json-writer.js';
import { MemorySink, type ByteSink } from './sink.js';
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
 * never sees half a file; only a regular file is replaced, never a FIFO or a device).
 * Shows a progress bar on a TTY when there are many entries.
 */
export function writeSnapshotFile(snapshot: unknown, path: string, format?: SnapshotFormat, progress?: boolean): WriteResult {
  checkString('path', path);
  if (path === '') throw new SnapshotFileError('the snapshot file name is empty; name a .pickle or .json file', 'ERR_CCA_FILE_UNWRITABLE', path);
  format = format === undefined ? formatFor(path) : checkFormat(format);
  if (progress !== undefined) checkBoolean('progress', progress);
  const showBar = progress ?? (process.stderr.isTTY === true && entryCount(snapshot) >= 50_000);
  // Bytes are not known ahead: the bar counts MiB written against an estimate of ~120 B/entry.
  const estimate = Math.max(1, Math.round((entryCount(snapshot) * 120) / 2 ** 20));
  const bar = showBar
    ? new cliProgress.SingleBar({ format: `writing ${path} [{bar}] {value}/{total} MiB`, stream: process.stderr }, cliProgress.Presets.shades_classic)
    : undefined;
  bar?.start(estimate, 0);
  try {
    const bytes = replaceFile(path, (out) => encodeTo(snapshot, format, out),
      bar ? (b) => bar.update(Math.min(estimate, Math.round(b / 2 ** 20))) : undefined);
    bar?.update(estimate);
    return { path, format, bytes };
  } finally {
    bar?.stop();
  }
}
