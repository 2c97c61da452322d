// Out-of-memory hooks, public and safe to register before the first allocation: callbacks
// get the numbers, and a snapshot can be written automatically at the moment of the OOM.
import { detailsOf, type CudaOutOfMemoryError, type OutOfMemoryDetails } from './errors.js';
import { checkString, typeError } from './validate.js';
import { fullSnapshot } from './history/snapshot-build.js';
import { writeSnapshotFile } from './snapshot/dump.js';

/** The error's numbers (OutOfMemoryDetails), and the error itself. */
export interface OutOfMemoryEvent extends OutOfMemoryDetails {
  error: CudaOutOfMemoryError;
}

const callbacks = new Set<(e: OutOfMemoryEvent) => void>();
// CCA_OOM_SNAPSHOT turns the dump on without code changes, as dumpSnapshotOnOutOfMemory would.
let dumpPath: string | null = process.env.CCA_OOM_SNAPSHOT || null;

/** Calls `callback` at every out-of-memory error (before it is thrown). Returns an unsubscribe function. */
export function onOutOfMemory(callback: (e: OutOfMemoryEvent) => void): () => void {
  if (typeof callback !== 'function') throw typeError('a function', 'callback', callback);
  callbacks.add(callback);
  return () => callbacks.delete(callback);
}

/**
 * Writes a snapshot (with history, if recording) to `path` at every out-of-memory error;
 * `{pid}` and `{time}` in the path are replaced. `null` turns it off. The environment
 * variable `CCA_OOM_SNAPSHOT` sets a path at start, for programs that cannot be changed.
 */
export function dumpSnapshotOnOutOfMemory(path: string | null): void {
  if (path !== null) {
    checkString('path', path);
    if (path === '') throw typeError('a file name (or null to stop)', 'path', path);
  }
  dumpPath = path;
}

/** @internal Called by cuda.alloc before rethrowing. Hooks never replace the OOM error. */
export function notifyOutOfMemory(error: CudaOutOfMemoryError): void {
  const event: OutOfMemoryEvent = { ...detailsOf(error), error };
  for (const cb of callbacks) {
    try {
      cb(event);
    } catch (e) {
      process.emitWarning(`onOutOfMemory callback threw: ${(e as Error).message}`, { code: 'CCA_OOM_CALLBACK_FAILED' });
    }
  }
  if (dumpPath !== null) {
    const path = dumpPath.replace('{pid}', String(process.pid)).replace('{time}', new Date().toISOString().replace(/[:.]/g, '-'));
    try {
      writeSnapshotFile(fullSnapshot({ lazyTraces: true }), path, undefined, false);
      (error as { snapshotPath?: string }).snapshotPath = path;
    } catch (e) {
      process.emitWarning(`could not write the OOM snapshot to ${path}: ${(e as Error).message}`, { code: 'CCA_OOM_DUMP_FAILED' });
    }
  }
}
