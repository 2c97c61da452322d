// Fuzz cases: snapshot files, each as bytes with a label saying how it was made.
// - structure: snapshots fast-check builds from the format's schema (valid structure,
//   arbitrary values: blocks that do not tile, unknown actions, huge sizes, ties in time),
//   written as pickle or JSON by our writer;
// - mutants of seed files (our own dumps and PyTorch's ResNet50 fixture): truncations, bit
//   flips, opcode swaps, huge declared lengths, spliced chunks, changed JSON values;
// - hostile files: deep nesting, MARK floods, long integers, globals.
// Deterministic from the seed.
import fc from 'fast-check';
import { writePickle } from '../../dist/snapshot/pickle-writer.js';
import { writeJson } from '../../dist/snapshot/json-writer.js';
import { MemorySink } from '../../dist/snapshot/sink.js';
import { tuple } from '../../dist/snapshot/tuple.js';

/** A small seeded PRNG (mulberry32): the same seed gives the same cases. */
export function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

const ACTIONS = ['alloc', 'free_requested', 'free_completed', 'segment_alloc', 'segment_free', 'segment_map',
  'segment_unmap', 'snapshot', 'oom', 'annotate', 'something_new'];
const size = fc.oneof(fc.integer({ min: 0, max: 4096 }), fc.integer({ min: 0, max: 2 ** 40 }).map((n) => n - (n % 512)),
  fc.constantFrom(0, 1, 512, 2 ** 20, 2 ** 21, 20 * 2 ** 20, 2 ** 53 - 1));
const addr = fc.oneof(fc.integer({ min: 0, max: 2 ** 47 }).map((n) => n - (n % 512)), fc.constantFrom(0, 2 ** 53 - 1));
const frame = fc.record({
  filename: fc.constantFrom('train.py', 'app.mjs', '??', 'Objects/call.c', '', 'x.ts'),
  line: fc.integer({ min: -1, max: 100_000 }),
  name: fc.string({ maxLength: 8 }),
});
const frames = fc.array(frame, { maxLength: 3 });
const block = fc.record({
  address: addr, size, requested_size: size,
  state: fc.constantFrom('active_allocated', 'active_pending_free', 'inactive'),
  frames,
}, { requiredKeys: ['address', 'size', 'state'] });
// Segments whose blocks tile them, and segments of arbitrary blocks.
const tiled = fc.tuple(addr, fc.array(fc.tuple(fc.integer({ min: 1, max: 4096 }),
  fc.constantFrom('active_allocated', 'active_pending_free', 'inactive')), { minLength: 1, maxLength: 8 }))
  .map(([base, parts]) => {
    let at = base;
    const blocks = parts.map(([units, state]) => {
      const b = { address: at, size: units * 512, requested_size: units * 512 - (units > 1 ? 7 : 0), state, frames: [] };
      at += b.size;
      return b;
    });
    return { address: base, total_size: at - base, blocks };
  });
const arbitrary = fc.record({ address: addr, total_size: size, blocks: fc.array(block, { maxLength: 6 }) });
const segment = fc.tuple(fc.oneof(tiled, arbitrary), fc.record({
  device: fc.integer({ min: 0, max: 2 }), stream: fc.constantFrom(0, 1, 0x7f0012345600),
  segment_type: fc.constantFrom('small', 'large'), is_expandable: fc.boolean(),
  segment_pool_id: fc.tuple(fc.constant(0), fc.integer({ min: 0, max: 3 })).map((p) => tuple(...p)),
  allocated_size: size, active_size: size, requested_size: size, frames,
}, { requiredKeys: ['device', 'stream', 'segment_type'] })).map(([a, b]) => ({ ...b, ...a }));
const time = fc.oneof(fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_000_001_000 }), fc.double({ noNaN: true, noDefaultInfinity: true }));
const entry = fc.record({
  action: fc.constantFrom(...ACTIONS), addr, size, stream: fc.constantFrom(0, 1, 2), time_us: time,
  frames, seq: fc.integer({ min: 0, max: 10_000 }), user_metadata: fc.constantFrom('', 'tag'),
  compile_context: fc.constant('N/A'), device_free: size,
  pool_id: fc.tuple(fc.constant(0), fc.integer({ min: 0, max: 3 })).map((p) => tuple(...p)),
}, { requiredKeys: ['action', 'addr', 'size', 'stream', 'time_us'] });
const annotation = fc.record({
  device: fc.integer({ min: 0, max: 2 }), name: fc.constantFrom('step', 'forward', 'x'),
  stage: fc.constantFrom('START', 'END'), time_us: time, seq: fc.integer({ min: 0, max: 10_000 }),
}, { requiredKeys: ['device', 'name', 'stage', 'time_us'] });
const settings = fc.record({
  PYTORCH_CUDA_ALLOC_CONF: fc.constantFrom('', 'expandable_segments:True', 'max_split_size_mb:64', 'bogus:1',
    'roundup_power2_divisions:4', 'garbage_collection_threshold:0.5'),
  expandable_segments: fc.boolean(), max_split_size: fc.constantFrom(-1, 2 ** 26),
}, { requiredKeys: [] });
export const snapshotArb = fc.record({
  segments: fc.array(segment, { maxLength: 6 }),
  device_traces: fc.array(fc.array(entry, { maxLength: 40 }), { maxLength: 3 }),
  external_annotations: fc.array(annotation, { maxLength: 8 }),
  allocator_settings: settings,
}, { requiredKeys: ['segments', 'device_traces'] });

const OPCODES = [0x28, 0x29, 0x2e, 0x4a, 0x4b, 0x4d, 0x4e, 0x58, 0x5d, 0x61, 0x65, 0x68, 0x6a, 0x6c, 0x71, 0x72, 0x73,
  0x74, 0x75, 0x7d, 0x80, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x94, 0x95,
  0x63, 0x93, 0x52, 0x69, 0x62, 0x81, 0x00, 0xff];
const LENGTHS = { 0x58: 4, 0x8b: 4, 0x8d: 8, 0x95: 8, 0x8c: 1, 0x8a: 1, 0x72: 4, 0x6a: 4 };

function mutate(seed, r) {
  const b = Buffer.from(seed);
  const kind = r.pick(['truncate', 'flip', 'opcode', 'length', 'splice', 'truncate', 'flip']);
  switch (kind) {
    case 'truncate':
      return { kind, bytes: b.subarray(0, r.int(b.length)) };
    case 'flip': {
      for (let i = 1 + r.int(8); i > 0; i--) b[r.int(b.length)] ^= 1 << r.int(8);
      return { kind, bytes: b };
    }
    case 'opcode': {
      for (let i = 1 + r.int(3); i > 0; i--) b[r.int(b.length)] = r.pick(OPCODES);
      return { kind, bytes: b };
    }
    case 'length': {
      // Find a length-bearing opcode near a random spot and declare a huge length.
      const start = r.int(b.length);
      for (let i = start; i < Math.min(b.length, start + 4096); i++) {
        const n = LENGTHS[b[i]];
        if (n === undefined || i + 1 + n > b.length) continue;
        const huge = r.pick([0xff, 0x7f]);
        b.fill(huge, i + 1, i + 1 + n);
        return { kind, bytes: b };
      }
      return { kind, bytes: b.subarray(0, start) };
    }
    default: {  // splice: a chunk copied over another place
      const len = 1 + r.int(Math.min(4096, b.length));
      const from = r.int(Math.max(1, b.length - len));
      const to = r.int(Math.max(1, b.length - len));
      b.copy(b, to, from, from + len);
      return { kind: 'splice', bytes: b };
    }
  }
}

function mutateJson(text, r) {
  const v = JSON.parse(text);
  const weird = [null, -1, 1.5, 'x', 2 ** 60, [], {}, true, '__proto__', { __proto__: { polluted: true } }, 1e308];
  // Walk to a random leaf or container and replace it.
  let node = v;
  let key = 'segments';
  for (let depth = 0; depth < 6; depth++) {
    const keys = node && typeof node === 'object' ? Object.keys(node) : [];
    if (keys.length === 0) break;
    key = r.pick(keys);
    if (r.next() < 0.3 || typeof node[key] !== 'object' || node[key] === null) break;
    node = node[key];
  }
  if (node && typeof node === 'object') node[key] = r.pick(weird);
  return Buffer.from(JSON.stringify(v));
}

function hostile(r) {
  const n = r.pick([1e3, 1e5, 1e6]);
  const kind = r.pick(['nest-pickle', 'marks', 'nest-json', 'long4', 'global', 'proto-key']);
  switch (kind) {
    case 'nest-pickle':  // lists nested n deep: EMPTY_LIST * n, APPEND * (n-1)
      return { kind, bytes: Buffer.concat([Buffer.from([0x80, 4]), Buffer.alloc(n, 0x5d), Buffer.alloc(n - 1, 0x61), Buffer.from([0x2e])]) };
    case 'marks':
      return { kind, bytes: Buffer.concat([Buffer.from([0x80, 4]), Buffer.alloc(n, 0x28), Buffer.from([0x2e])]) };
    case 'nest-json':
      return { kind, bytes: Buffer.from(`{"segments":${'['.repeat(n)}${']'.repeat(n)}}`) };
    case 'long4': {  // a long integer of n bytes where a size belongs
      const len = Buffer.alloc(4);
      len.writeUInt32LE(n);
      const key = Buffer.from('segments');
      return { kind, bytes: Buffer.concat([Buffer.from([0x80, 4, 0x7d, 0x8c, key.length]), key, Buffer.from([0x8b]), len,
        Buffer.alloc(n, 0x11), Buffer.from([0x73, 0x2e])]) };
    }
    case 'global':
      return { kind, bytes: Buffer.concat([Buffer.from([0x80, 4, 0x63]), Buffer.from('os\nsystem\n'), Buffer.from([0x8c, 4]),
        Buffer.from('true'), Buffer.from([0x85, 0x52, 0x2e])]) };
    default:
      return { kind, bytes: Buffer.from('{"__proto__": {"segments": []}, "segments": [], "device_traces": []}') };
  }
}

/**
 * The case generator: `seeds` are { name, bytes } files to mutate. Returns case i's
 * { label, bytes }. `fixtureShare`: the fraction of mutants made from the first seed.
 */
export function caseMaker(seedValue, seeds, { fixtureShare = 0.1 } = {}) {
  const r = prng(seedValue);
  const structural = (i) => fc.sample(snapshotArb, { seed: seedValue + i, numRuns: 1 })[0];
  return (i) => {
    const roll = r.next();
    if (roll < 0.35) {
      const format = r.next() < 0.5 ? 'pickle' : 'json';
      const bytes = rawEncode(structural(i), format);
      return r.next() < 0.3 ? { label: `structure-${format}-mutant`, ...withKind(mutate(bytes, r)) } : { label: `structure-${format}`, bytes };
    }
    if (roll < 0.42) {
      const h = hostile(r);
      return { label: `hostile-${h.kind}`, bytes: h.bytes };
    }
    const seed = r.next() < fixtureShare ? seeds[0] : r.pick(seeds.slice(1));
    if (seed.name.endsWith('.json') && r.next() < 0.5) return { label: `${seed.name}-json-value`, bytes: mutateJson(seed.bytes.toString(), r) };
    const m = mutate(seed.bytes, r);
    return { label: `${seed.name}-${m.kind}`, bytes: m.bytes };
  };
}

// The writers without encodeSnapshot's check: generated values may be out of range on purpose.
function rawEncode(value, format) {
  const sink = new MemorySink();
  if (format === 'json') writeJson(value, sink);
  else writePickle(value, sink);
  return sink.bytes();
}

function withKind(m) {
  return { bytes: m.bytes };
}
