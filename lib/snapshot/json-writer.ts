// The same snapshot dict as JSON, streamed in chunks (a million trace entries do not fit
// in one JS string). Lists are walked here; each dict below the top level (a segment, a
// trace entry) goes through the engine's JSON.stringify at once, which is many times
// faster than walking its fields. Tuples become arrays; non-finite floats become null.
import type { ByteSink } from './sink.js';
import { LazyList } from './lazy-list.js';
import { JsonBytes } from './json-bytes.js';

const CHUNK = 256 * 1024;

export function writeJson(value: unknown, sink: ByteSink): void {
  let parts: string[] = [];
  let size = 0;
  const emit = (s: string): void => {
    parts.push(s);
    size += s.length;
    if (size >= CHUNK) flush();
  };
  const flush = (): void => {
    if (parts.length === 0) return;
    sink.write(Buffer.from(parts.join(''), 'utf8'));
    parts = [];
    size = 0;
  };
  const walk = (v: unknown, depth = 0): void => {
    if (v instanceof LazyList && v.writeJson) {
      // A dump's entries, as bytes straight from their records (build.ts).
      emit('[');
      flush();
      const out = new JsonBytes(sink);
      for (let i = 0; i < v.length; i += 1000) {
        if (i) out.ascii(',');
        v.writeJson(i, Math.min(i + 1000, v.length), out);
      }
      out.flush();
      return emit(']');
    }
    if (v instanceof LazyList) {
      emit('[');
      for (let i = 0; i < v.length; i += 1000) {
        v.chunk(i, i + 1000).forEach((item, k) => {
          if (i + k) emit(',');
          walk(item, depth + 1);
        });
      }
      return emit(']');
    }
    if (depth > 0 && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      let text: string | undefined;
      try {
        text = JSON.stringify(v);
      } catch {
        // a BigInt inside: walk it field by field below
      }
      if (text !== undefined) return emit(text);
    }
    switch (typeof v) {
      case 'number':
        return emit(Number.isFinite(v) ? String(v) : 'null');
      case 'bigint':
        return emit(v.toString());
      case 'string':
        return emit(JSON.stringify(v));
      case 'boolean':
        return emit(v ? 'true' : 'false');
      case 'object':
        if (v === null) return emit('null');
        if (Array.isArray(v)) {
          emit('[');
          v.forEach((item, i) => {
            if (i) emit(',');
            walk(item, depth + 1);
          });
          return emit(']');
        } else {
          emit('{');
          let first = true;
          for (const [k, item] of Object.entries(v)) {
            if (item === undefined) continue;
            if (!first) emit(',');
            first = false;
            emit(JSON.stringify(k));
            emit(':');
            walk(item, depth + 1);
          }
          return emit('}');
        }
      default:
        return emit('null');
    }
  };
  walk(value);
  flush();
}
