// Compatibility against the real things: Python's pickle reads our files into exactly the
// dict we meant, our reader reads PyTorch's fixture, and a round trip through our reader
// and writer leaves Python's unpickled object equal to the original.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CorruptSnapshotError, cuda, encodeSnapshot, loadSnapshot, memory, parseSnapshot, tuple, Stream } from '../../lib/index.js';
import { freshSim, MiB } from '../support/helpers.js';
import { readPickle } from '../../lib/snapshot/pickle-reader.js';
import { tempDir } from '../support/temp-dir.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.pickle', import.meta.url));
const SUMMARY = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.summary.json', import.meta.url));
const dir = tempDir('cca-pickle-');

// The opcodes MemoryViz.js's unpickler handles (pickletools names).
const VIEWER_OPCODES = new Set([
  'PROTO', 'FRAME', 'STOP', 'MARK', 'MEMOIZE', 'BINPUT', 'LONG_BINPUT', 'BINGET', 'LONG_BINGET', 'EMPTY_DICT', 'DICT',
  'SETITEM', 'SETITEMS', 'EMPTY_LIST', 'LIST', 'APPEND', 'APPENDS', 'EMPTY_TUPLE', 'TUPLE', 'TUPLE1', 'TUPLE2', 'TUPLE3',
  'NONE', 'NEWTRUE', 'NEWFALSE', 'BININT', 'BININT1', 'BININT2', 'LONG1', 'BINFLOAT', 'SHORT_BINUNICODE', 'BINUNICODE',
]);

function python(script: string, ...args: string[]): string {
  return execFileSync('python3', ['-c', script, ...args], { encoding: 'utf8', maxBuffer: 1 << 30 });
}

// Python's view of a pickle: JSON with tuples marked, plus the opcodes used.
const PY_DUMP = `
import json, pickle, pickletools, sys
data = open(sys.argv[1], 'rb').read()
obj = pickle.loads(data)
def mark(o):
    if isinstance(o, tuple): return {'__tuple__': [mark(x) for x in o]}
    if isinstance(o, list): return [mark(x) for x in o]
    if isinstance(o, dict): return {str(k): mark(v) for k, v in o.items()}
    return o
ops = sorted(set(op.name for op, arg, pos in pickletools.genops(data)))
print(json.dumps({'value': mark(obj), 'ops': ops}))
`;

function markTuples(v: unknown): unknown {
  if (Array.isArray(v)) {
    const items = v.map(markTuples);
    return Object.getOwnPropertySymbols(v).length ? { __tuple__: items } : items;
  }
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [k, markTuples(x)]));
  return v;
}

describe('our pickles in Python', () => {
  let snapshotPath = '';
  let expected: unknown;
  beforeAll(async () => {
    freshSim({ devices: 2 });
    memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 1000 });
    const s = Stream.create();
    const keep = cuda.alloc(3 * MiB, { stream: s, tag: 'weights ü' });
    for (let i = 0; i < 50; i++) cuda.alloc(512 * (i + 1), { device: i % 2 }).free();
    cuda.recordStream(keep, Stream.create());
    memory.annotate('step', () => cuda.alloc(70_000).free());
    snapshotPath = join(dir, 'ours.pickle');
    await memory._dump_snapshot(snapshotPath);
    expected = markTuples(loadSnapshot(snapshotPath));
  });

  it('load with pickle.load into exactly the dict we wrote, using only the viewer\'s opcodes', () => {
    const py = JSON.parse(python(PY_DUMP, snapshotPath));
    expect(py.value).toEqual(expected);
    for (const op of py.ops) expect(VIEWER_OPCODES.has(op), `opcode ${op}`).toBe(true);
    expect(py.value.segments[0].segment_pool_id).toEqual({ __tuple__: [0, 0] });
    expect(py.value.device_traces).toHaveLength(2);
    expect(py.value.external_annotations.map((a: { stage: string }) => a.stage)).toEqual(['START', 'END']);
  });

  it('equal the dict _snapshot() returns, and the JSON dump holds the same dict', async () => {
    const fromPickle = loadSnapshot(snapshotPath);
    const jsonPath = join(dir, 'ours.json');
    await memory._dump_snapshot(jsonPath);
    const fromJson = JSON.parse(readFileSync(jsonPath, 'utf8'));
    // Drop the snapshot entries the two dumps themselves recorded; the rest is identical.
    const strip = (x: any) => ({ ...x, device_traces: x.device_traces.map((t: any[]) => t.filter((e) => e.action !== 'snapshot')) });
    expect(strip(fromJson)).toEqual(strip(JSON.parse(JSON.stringify(fromPickle))));
  });

  it('written chunk by chunk, hold exactly what _snapshot() returns', async () => {
    const strip = (x: any) => JSON.parse(JSON.stringify({
      ...x, device_traces: x.device_traces.map((t: any[]) => t.filter((e) => e.action !== 'snapshot')),
    }));
    const eager = strip(memory._snapshot());
    const path = join(dir, 'again.pickle');
    await memory._dump_snapshot(path);
    expect(strip(loadSnapshot(path))).toEqual(eager);
  });

  it('store each distinct stack once', () => {
    const bytes = readFileSync(snapshotPath);
    const entries = (expected as any).device_traces.flat().length;
    // 150+ trace entries with 5+ frames each would take tens of KiB unshared.
    expect(bytes.length).toBeLessThan(entries * 120);
  });
});

describe('PyTorch\'s ResNet50 fixture', () => {
  it('reads with our reader and matches its summary', () => {
    const s = loadSnapshot(FIXTURE);
    const summary = JSON.parse(readFileSync(SUMMARY, 'utf8'));
    expect(s.segments).toHaveLength(summary.segments);
    expect(s.segments.reduce((n, g) => n + g.total_size, 0)).toBe(summary.reserved_bytes);
    expect(s.segments.reduce((n, g) => n + g.allocated_size, 0)).toBe(summary.allocated_bytes);
    expect(s.device_traces.map((t) => t.length)).toEqual(summary.trace_entries_per_list);
    const counts: Record<string, number> = {};
    for (const e of s.device_traces[0]!) counts[e.action] = (counts[e.action] ?? 0) + 1;
    expect(counts).toEqual(summary.trace_entries_by_action);
    expect(s.segments[0]!.segment_pool_id).toEqual([0, 0]);
    for (const seg of s.segments) {
      let at = seg.address;
      for (const b of seg.blocks) {
        expect(b.address).toBe(at);
        at += b.size;
      }
      expect(at).toBe(seg.address + seg.total_size);
    }
  });

  it('round-trips through our reader and writer: Python sees equal objects', () => {
    const ours = join(dir, 'fixture-roundtrip.pickle');
    writeFileSync(ours, encodeSnapshot(loadSnapshot(FIXTURE)));
    const out = python(`
import pickle, sys, pickletools
a = pickle.load(open(sys.argv[1], 'rb'))
b = pickle.load(open(sys.argv[2], 'rb'))
ops = set(op.name for op, arg, pos in pickletools.genops(open(sys.argv[2], 'rb').read()))
print(a == b, sorted(ops))
`, FIXTURE, ours);
    expect(out.startsWith('True')).toBe(true);
    for (const op of JSON.parse(out.slice(5).replace(/'/g, '"'))) expect(VIEWER_OPCODES.has(op)).toBe(true);
    // Shared frames stay shared: our file is about the size of PyTorch's, not many times it.
    expect(readFileSync(ours).length).toBeLessThan(readFileSync(FIXTURE).length * 1.5);
  });

  it('rejects every truncation of it with a clear error, never a crash or a hang', () => {
    const bytes = readFileSync(FIXTURE);
    for (let cut = 0; cut < bytes.length; cut += 7919) {
      expect(() => parseSnapshot(bytes.subarray(0, cut))).toThrow(CorruptSnapshotError);
    }
    expect(() => parseSnapshot(bytes.subarray(0, bytes.length - 1))).toThrow(/before STOP|more bytes/);
  });
});

describe('corrupt input', () => {
  it('gets CorruptSnapshotError with a code and an offset', () => {
    const good = encodeSnapshot({ segments: [], device_traces: [[]] });
    const flipped = Buffer.from(good);
    expect(flipped[11]).toBe(0x7d);  // PROTO (2 bytes), FRAME header (9), then EMPTY_DICT
    flipped[11] = 0x63;  // GLOBAL: never in a snapshot
    const cases: Array<[Uint8Array, RegExp, string?]> = [
      [Buffer.alloc(0), /empty/],
      [Buffer.from('hello'), /neither a pickle nor JSON/],
      [Buffer.from('{"segments": 3}'), /segments: expected a list, got 3/],
      [Buffer.from('{"segments": [{"blocks": 1}]}'), /segments\[0\]\.device: expected a non-negative integer/],
      [Buffer.from('{not json'), /not valid JSON/],
      [flipped, /refused to load: opcode 0x63 at byte 11 names Python code/, 'ERR_CCA_UNSAFE_PICKLE'],
      [Buffer.from([0x80, 0x09, 0x4e, 0x2e]), /unsupported protocol 9/],
      [Buffer.from([0x80, 0x04, 0x4b, 0x01, 0x2e]), /expected a snapshot dict/],
      [Buffer.from([0x80, 0x04, 0x65, 0x2e]), /no MARK|underflow/],
      [Buffer.from([0x80, 0x04, 0x68, 0x07, 0x2e]), /memo 7 was never stored/],
    ];
    for (const [bytes, message, code] of cases) {
      let err: unknown;
      try {
        parseSnapshot(bytes);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CorruptSnapshotError);
      expect((err as CorruptSnapshotError).code).toBe(code ?? 'ERR_CCA_CORRUPT_SNAPSHOT');
      expect((err as Error).message).toMatch(message);
    }
    expect(() => loadSnapshot(join(dir, 'missing.pickle'))).toThrow(expect.objectContaining({
      code: 'ERR_CCA_FILE_NOT_FOUND', errno: 'ENOENT', message: expect.stringMatching(/missing\.pickle: no such file/),
    }));
  });

  it('keeps integers beyond 2^53 exact, and tuples as tuples', () => {
    const value = { segments: [], device_traces: [], big: 2n ** 60n + 1n, neg: -(2n ** 70n), pair: tuple(1, 2), f: 0.5 };
    const bytes = encodeSnapshot(value);
    const back = parseSnapshot(bytes) as any;
    expect(back.big).toBe(2n ** 60n + 1n);
    expect(back.neg).toBe(-(2n ** 70n));
    expect(back.f).toBe(0.5);
    const p = join(dir, 'big.pickle');
    writeFileSync(p, bytes);
    expect(python("import pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(d['big'], d['neg'], d['pair'])", p).trim())
      .toBe(`${2n ** 60n + 1n} ${-(2n ** 70n)} (1, 2)`);
  });
});

describe('the reader cannot be made slow, polluted or run code', () => {
  const dict = (key: string, valueOps: number[]) => {
    const k = Buffer.from(key);
    return Buffer.from([0x80, 4, 0x7d, 0x8c, k.length, ...k, ...valueOps, 0x73, 0x2e]);
  };

  it('reads a 4 MB LONG4 integer (quadratic readers take hours), exactly', () => {
    const n = 4 << 20;
    const len = Buffer.alloc(4);
    len.writeUInt32LE(n);
    const body = Buffer.alloc(n, 0x01);
    const k = Buffer.from('big');
    const bytes = Buffer.concat([Buffer.from([0x80, 4, 0x7d, 0x8c, k.length]), k, Buffer.from([0x8b]), len, body, Buffer.from([0x73, 0x2e])]);
    const v = (parseSnapshot as unknown as (b: Uint8Array) => unknown);
    // Not a snapshot (no segments), so the validator refuses it, after the reader read it all.
    expect(() => v(bytes)).toThrow(/segments: expected a list/);
    // The same integer through the raw reader: its value is 0x0101...01 (n bytes).
    const big = readPickleValue(bytes) as Record<string, bigint>;
    expect(big.big! % (1n << 64n)).toBe(0x0101010101010101n);
    expect(big.big!.toString(16).length).toBe(2 * n - 1);
  });

  it('keeps a "__proto__" key as an own key, never as the prototype', () => {
    const ops = [0x5d];  // EMPTY_LIST as the value
    const v = readPickleValue(dict('__proto__', ops)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    expect(Array.isArray(Object.getOwnPropertyDescriptor(v, '__proto__')!.value)).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses every opcode that names Python code, before building anything', () => {
    for (const op of [0x63, 0x93, 0x52, 0x69, 0x6f, 0x81, 0x92, 0x62, 0x82, 0x83, 0x84, 0x50, 0x51]) {
      expect(() => parseSnapshot(Buffer.from([0x80, 4, op, 0x2e]))).toThrow(expect.objectContaining({ code: 'ERR_CCA_UNSAFE_PICKLE' }));
    }
  });
});

function readPickleValue(bytes: Uint8Array): unknown {
  return readPickle(bytes);
}
