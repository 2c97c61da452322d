// A Recording (recording.ts) as text, for the viewer's what-if panel: `cca viz` reads the
// history once in Node and embeds it; the page's Web Worker replays it on the wasm engine
// under the settings the reader picks. The transfer form's columns (recording-transfer.ts)
// travel as gzip'd base64 (a million entries: ~64 MB of doubles, a few MB packed), the rest as
// JSON with its Maps tagged. Encoding needs Node (zlib); decoding only what a browser Worker
// has (DecompressionStream, atob), so the worker's bundle takes this file's decoder alone.
import type { RecordingTransfer } from './recording-transfer.js';

/** @internal */
export interface RecordingText {
  /** The transfer form less its buffers, as JSON (Maps as { $map: entries }). */
  json: string;
  /** Each buffer: gzip'd, base64. */
  trace: string;
  reserved: string;
  slot: string;
  reuses: string;
}

const BUFFERS = ['trace', 'reserved', 'slot', 'reuses'] as const;

/** @internal Node: the text form of a transfer (gzip: a function of zlib's gzipSync). */
export function transferToText(t: RecordingTransfer, gzip: (bytes: Uint8Array) => Uint8Array): RecordingText {
  const { trace, reserved, slot, reuses, ...rest } = t;
  const text = (buf: SharedArrayBuffer) => Buffer.from(gzip(new Uint8Array(buf))).toString('base64');
  return {
    json: JSON.stringify(rest, (_k, v: unknown) => (v instanceof Map ? { $map: [...v] } : v)),
    trace: text(trace), reserved: text(reserved), slot: text(slot), reuses: text(reuses),
  };
}

async function gunzip(b64: string): Promise<SharedArrayBuffer> {
  const packed = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream('gzip'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  // fromTransfer reads SharedArrayBuffers; where a page is not cross-origin isolated there is
  // none, and a plain ArrayBuffer serves the same reads.
  const Shared = typeof SharedArrayBuffer === 'function' ? SharedArrayBuffer : ArrayBuffer;
  const out = new Shared(bytes.byteLength);
  new Uint8Array(out).set(bytes);
  return out as SharedArrayBuffer;
}

/** @internal Browser or Node 18+: the transfer form back from its text. */
export async function textToTransfer(t: RecordingText): Promise<RecordingTransfer> {
  const rest = JSON.parse(t.json, (_k, v: unknown) =>
    (v !== null && typeof v === 'object' && '$map' in v ? new Map((v as { $map: [unknown, unknown][] }).$map) : v)) as
    Omit<RecordingTransfer, (typeof BUFFERS)[number]>;
  const [trace, reserved, slot, reuses] = await Promise.all(BUFFERS.map((k) => gunzip(t[k])));
  return { ...rest, trace: trace!, reserved: reserved!, slot: slot!, reuses: reuses! };
}

