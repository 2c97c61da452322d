// The offline viewer's page logic: the pure parts of the page script (decoding the data,
// columns, the state at an event, search, the private-pool bands), on `CCAViewer` so tests
// run them in Node. A script, not a module: tsconfig.viewer.json compiles it with page.ts,
// and html.ts inlines the two as one script, this one first.
//
// Scale: the timeline draws one column per pixel from the events in view (the largest
// allocated value of each column, so no peak is lost), so a redraw costs one pass over
// the visible events; the state at an event is rebuilt from checkpoints of the live set
// taken every 50,000 events, so a click never replays more than that.

// The data's shape, as lib/viewer/model.ts writes it. Declared again here because a script
// cannot import; test/contract/viewer-shape.test.ts holds the two declarations together, and
// test/tools/viewer.test.ts runs this page's logic on model.ts's output.
interface RawDevice {
  device: number;
  count: number;
  action: string;
  addr: string;
  size: string;
  time: string;
  stack: string;
  tag: string;
  allocated: string;
  reserved: string;
  allocatedAtStart: number;
  reservedAtStart: number;
  initial: [number, number, number][];
  /** [name index, first event inside, first event after] */
  regions: [number, number, number][];
  segments: { address: number; total: number; stream: number; type: string; blocks: [number, number, number, number, number][] }[];
  pool: string;
  pools: RawPool[];
}

interface RawPool {
  id: [number, number];
  at: string;
  allocated: string;
  reserved: string;
  allocatedAtStart: number;
  reservedAtStart: number;
  peakReserved: number;
}

interface Pool {
  name: string;
  at: Int32Array;
  allocated: Float64Array;
  reserved: Float64Array;
  allocatedAtStart: number;
  reservedAtStart: number;
  peakReserved: number;
}

/** The private-pool view's bands per column: the default pools' allocated memory, then per
 *  pool drawn (the largest by peak reserved; the rest summed in one) an envelope of what it
 *  reserved and, inside, what it has allocated. */
interface PoolBands {
  names: string[];
  defaultAllocated: Float64Array;
  envelope: Float64Array[];
  allocated: Float64Array[];
}

interface ViewerInput {
  title: string;
  actions: string[];
  blockStates: readonly string[];
  stacks: string[][];
  tags: string[];
  devices: RawDevice[];
  regionNames: string[];
  settings: unknown;
}

interface Dev {
  raw: RawDevice;
  n: number;
  action: Uint8Array;
  addr: Float64Array;
  size: Float64Array;
  time: Float64Array;
  stack: Int32Array;
  tag: Int32Array;
  allocated: Float64Array;
  reserved: Float64Array;
  /** Action code whose event releases an allocation (free_completed, or free_requested). */
  release: number;
  checkpoints: Map<number, Map<number, [number, number]>>;
  /** Each event's index into `pools` (-1: default pools); null when there is no private pool. */
  pool: Int32Array | null;
  pools: Pool[];
}

interface Columns {
  /** Largest allocated value in each column. */
  allocated: Float64Array;
  /** Reserved after the last event of each column. */
  reserved: Float64Array;
  /** The event holding each column's largest allocated value. */
  at: Int32Array;
}

const CHECKPOINT_EVERY = 50_000;
/** Half-strength colours for allocations inside private pools' envelopes. */
const POOL_COLOURS = ['rgba(245, 133, 24, 0.5)', 'rgba(84, 162, 75, 0.5)', 'rgba(228, 87, 86, 0.5)', 'rgba(178, 121, 162, 0.5)',
  'rgba(114, 183, 178, 0.5)', 'rgba(238, 202, 59, 0.5)', 'rgba(157, 117, 93, 0.5)', 'rgba(255, 157, 166, 0.5)'];

const CCAViewer = {
  decode(b64: string, kind: 'u8' | 'i32' | 'f64'): Uint8Array | Int32Array | Float64Array {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    if (kind === 'u8') return bytes;
    return kind === 'i32' ? new Int32Array(bytes.buffer) : new Float64Array(bytes.buffer);
  },

  device(raw: RawDevice, actions: string[]): Dev {
    const action = CCAViewer.decode(raw.action, 'u8') as Uint8Array;
    const completed = actions.indexOf('free_completed');
    return {
      raw,
      n: raw.count,
      action,
      addr: CCAViewer.decode(raw.addr, 'f64') as Float64Array,
      size: CCAViewer.decode(raw.size, 'f64') as Float64Array,
      time: CCAViewer.decode(raw.time, 'f64') as Float64Array,
      stack: CCAViewer.decode(raw.stack, 'i32') as Int32Array,
      tag: CCAViewer.decode(raw.tag, 'i32') as Int32Array,
      allocated: CCAViewer.decode(raw.allocated, 'f64') as Float64Array,
      reserved: CCAViewer.decode(raw.reserved, 'f64') as Float64Array,
      release: action.includes(completed) ? completed : actions.indexOf('free_requested'),
      checkpoints: new Map(),
      pool: raw.pool ? (CCAViewer.decode(raw.pool, 'i32') as Int32Array) : null,
      pools: raw.pools.map((p) => ({
        // PyTorch's ids: (n, 0) a CUDA graph's own pool, (0, n) a MemPool or a shared graph pool.
        name: `${p.id[0] !== 0 && p.id[1] === 0 ? 'graph pool' : 'pool'} (${p.id[0]}, ${p.id[1]})`,
        at: CCAViewer.decode(p.at, 'i32') as Int32Array,
        allocated: CCAViewer.decode(p.allocated, 'f64') as Float64Array,
        reserved: CCAViewer.decode(p.reserved, 'f64') as Float64Array,
        allocatedAtStart: p.allocatedAtStart,
        reservedAtStart: p.reservedAtStart,
        peakReserved: p.peakReserved,
      })),
    };
  },

  /** A pool's [allocated, reserved] after event i (i = -1: when the history began). */
  poolAt(p: Pool, i: number): [number, number] {
    let lo = 0;
    let hi = p.at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (p.at[mid]! <= i) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? [p.allocatedAtStart, p.reservedAtStart] : [p.allocated[lo - 1]!, p.reserved[lo - 1]!];
  },

  /** The bands of the private-pool view at each column's event; `most` pools drawn apart. */
  poolBands(dev: Dev, cols: Columns, most = 8): PoolBands {
    const order = dev.pools.map((_, k) => k).sort((a, b) => dev.pools[b]!.peakReserved - dev.pools[a]!.peakReserved);
    const apart = order.slice(0, order.length > most ? most - 1 : most);
    const rest = order.slice(apart.length);
    const w = cols.at.length;
    const bands = apart.length + (rest.length ? 1 : 0);
    const out: PoolBands = {
      names: [...apart.map((k) => dev.pools[k]!.name), ...(rest.length ? [`${rest.length} other pools`] : [])],
      defaultAllocated: new Float64Array(w),
      envelope: Array.from({ length: bands }, () => new Float64Array(w)),
      allocated: Array.from({ length: bands }, () => new Float64Array(w)),
    };
    for (let c = 0; c < w; c++) {
      const i = cols.at[c]!;
      if (i < 0) continue;
      let inPools = 0;
      order.forEach((k, rank) => {
        const band = Math.min(rank, bands - 1);
        const [a, r] = CCAViewer.poolAt(dev.pools[k]!, i);
        inPools += a;
        out.allocated[band]![c] += a;
        out.envelope[band]![c] += Math.max(a, r);
      });
      out.defaultAllocated[c] = dev.allocated[i]! - inPools;
    }
    return out;
  },

  columns(dev: Dev, lo: number, hi: number, width: number): Columns {
    const w = Math.max(1, Math.min(width, hi - lo));
    const out: Columns = { allocated: new Float64Array(w), reserved: new Float64Array(w), at: new Int32Array(w).fill(-1) };
    const per = (hi - lo) / w;
    for (let c = 0; c < w; c++) {
      const from = lo + Math.floor(c * per);
      const to = Math.max(from + 1, lo + Math.floor((c + 1) * per));
      let best = -1;
      for (let i = from; i < to && i < hi; i++) {
        if (best < 0 || dev.allocated[i]! > dev.allocated[best]!) best = i;
      }
      if (best < 0) continue;
      out.at[c] = best;
      out.allocated[c] = dev.allocated[best]!;
      out.reserved[c] = dev.reserved[Math.min(hi, to) - 1]!;
    }
    return out;
  },

  /** Live allocations after event i (i = -1: when the history began): address -> [size, stack]. */
  liveAt(dev: Dev, i: number, actions: string[]): Map<number, [number, number]> {
    const alloc = actions.indexOf('alloc');
    let from = -1;
    let live: Map<number, [number, number]> | undefined;
    for (let c = Math.floor((i + 1) / CHECKPOINT_EVERY) * CHECKPOINT_EVERY - 1; c >= 0; c -= CHECKPOINT_EVERY) {
      const saved = dev.checkpoints.get(c);
      if (saved) {
        from = c;
        live = new Map(saved);
        break;
      }
    }
    if (!live) live = new Map(dev.raw.initial.map(([a, s, k]) => [a, [s, k]]));
    for (let j = from + 1; j <= i; j++) {
      const code = dev.action[j];
      if (code === alloc) live.set(dev.addr[j]!, [dev.size[j]!, dev.stack[j]!]);
      else if (code === dev.release) live.delete(dev.addr[j]!);
      if ((j + 1) % CHECKPOINT_EVERY === 0 && !dev.checkpoints.has(j)) dev.checkpoints.set(j, new Map(live));
    }
    return live;
  },

  /** Segments present after event i: the final ones, less those made later, plus those released later. */
  segmentsAt(dev: Dev, i: number, actions: string[]): { address: number; total: number }[] {
    const grows = [actions.indexOf('segment_alloc'), actions.indexOf('segment_map')];
    const shrinks = [actions.indexOf('segment_free'), actions.indexOf('segment_unmap')];
    const segs = new Map<number, number>(dev.raw.segments.map((g) => [g.address, g.total]));
    for (let j = dev.n - 1; j > i; j--) {
      const code = dev.action[j]!;
      if (grows.includes(code)) segs.delete(dev.addr[j]!);
      else if (shrinks.includes(code)) segs.set(dev.addr[j]!, dev.size[j]!);
    }
    return [...segs].map(([address, total]) => ({ address, total })).sort((a, b) => a.address - b.address);
  },

  /** Events matching a hex address, or a frame or tag substring (case-insensitive); at most `limit`. */
  search(dev: Dev, data: ViewerInput, query: string, limit = 200): number[] {
    const q = query.trim().toLowerCase();
    const out: number[] = [];
    if (q === '') return out;
    if (/^0x[0-9a-f]+$/.test(q)) {
      const want = parseInt(q.slice(2), 16);
      for (let i = 0; i < dev.n && out.length < limit; i++) if (dev.addr[i] === want) out.push(i);
      return out;
    }
    const stacks = new Set<number>();
    data.stacks.forEach((frames, k) => {
      if (frames.some((f) => f.toLowerCase().includes(q))) stacks.add(k);
    });
    const tags = new Set<number>();
    data.tags.forEach((t, k) => {
      if (t.toLowerCase().includes(q)) tags.add(k);
    });
    for (let i = 0; i < dev.n && out.length < limit; i++) {
      if (stacks.has(dev.stack[i]!) || tags.has(dev.tag[i]!)) out.push(i);
    }
    return out;
  },

  /** The annotated regions event i happened inside, as "name #run" (runs counted from 1). */
  regionsAt(dev: Dev, data: ViewerInput, i: number): string[] {
    const runs = new Map<number, number>();
    const out: string[] = [];
    for (const [name, from, to] of dev.raw.regions) {
      const run = (runs.get(name) ?? 0) + 1;
      runs.set(name, run);
      if (from <= i && i < to) out.push(`${data.regionNames[name]} #${run}`);
    }
    return out;
  },

  bytes(n: number): string {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let u = 0;
    let v = Math.abs(n);
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return `${n < 0 ? '-' : ''}${u === 0 ? v : v.toFixed(2)} ${units[u]}`;
  },
};

(globalThis as unknown as { CCAViewer: typeof CCAViewer }).CCAViewer = CCAViewer;

