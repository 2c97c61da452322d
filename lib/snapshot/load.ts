// Reading snapshot files, ours or PyTorch's, pickle or JSON (told apart by their first
// byte). A bare list of segments (old PyTorch) becomes { segments, device_traces: [] }.
import { readFileSync } from 'node:fs';
import { CorruptSnapshotError } from '../errors.js';
import { readPickle } from './pickle-reader.js';
import type { Snapshot } from './types.js';

export function parseSnapshot(bytes: Uint8Array, source = 'snapshot'): Snapshot {
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
  return checkShape(value, source);
}

function checkShape(value: unknown, source: string): Snapshot {
  if (Array.isArray(value)) return { segments: checkSegments(value, source), device_traces: [] };
  if (value === null || typeof value !== 'object') throw new CorruptSnapshotError(`${source} does not hold a snapshot dict`);
  const v = value as Record<string, unknown>;
  if (!Array.isArray(v.segments)) throw new CorruptSnapshotError(`${source} has no "segments" list: not a memory snapshot`);
  checkSegments(v.segments, source);
  const traces = v.device_traces ?? [];
  if (!Array.isArray(traces) || !traces.every(Array.isArray)) {
    throw new CorruptSnapshotError(`${source}: "device_traces" must be a list of lists`);
  }
  return { ...(v as object), segments: v.segments, device_traces: traces } as Snapshot;
}

function checkSegments(segments: unknown[], source: string): Snapshot['segments'] {
  segments.forEach((s, i) => {
    const seg = s as Record<string, unknown> | null;
    if (seg === null || typeof seg !== 'object' || !Array.isArray(seg.blocks) || typeof seg.total_size !== 'number') {
      throw new CorruptSnapshotError(`${source}: segment ${i} lacks "blocks" or "total_size"`);
    }
  });
  return segments as Snapshot['segments'];
}

/** Reads a snapshot file (pickle or JSON), ours or PyTorch's. */
export function loadSnapshot(path: string): Snapshot {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new CorruptSnapshotError(`cannot read ${path}: ${(e as Error).message}`);
  }
  return parseSnapshot(bytes, path);
}
