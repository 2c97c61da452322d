// The offline viewer's page script: inlined into the HTML that `cca viz` writes, with the
// data beside it (no network, no library). A script, not a module: tsconfig.viewer.json
// compiles it with the DOM types. The pure parts are on `CCAViewer` so tests can run them
// in Node; `main()` draws only where there is a document.
//
// Scale: the timeline draws one column per pixel from the events in view (the largest
// allocated value of each column, so no peak is lost), so a redraw costs one pass over
// the visible events; the state at an event is rebuilt from checkpoints of the live set
// taken every 50,000 events, so a click never replays more than that.

// The data's shape, as lib/viewer/model.ts writes it. Declared again here because a script
// cannot import; test/tools/viewer.test.ts runs this page's logic on model.ts's output.
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
}

interface ViewerInput {
  title: string;
  actions: string[];
  blockStates: string[];
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
    };
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

function main(): void {
  const data = JSON.parse(document.getElementById('cca-data')!.textContent!) as ViewerInput;
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const devices = data.devices.map((d) => CCAViewer.device(d, data.actions));
  document.title = `${data.title}: memory`;
  $('title').textContent = data.title;
  const deviceSelect = $<HTMLSelectElement>('device');
  devices.forEach((d, k) => deviceSelect.add(new Option(`device ${d.raw.device} (${d.n} events)`, String(k))));
  // Like memory_viz: start on the device with the longest history.
  let dev = devices.reduce((best, d) => (d.n > best.n ? d : best), devices[0]!);
  deviceSelect.value = String(devices.indexOf(dev));
  let lo = 0;
  let hi = dev.n;
  let selected = -1;
  let cols: Columns | null = null;
  const canvas = $<HTMLCanvasElement>('timeline');
  const ctx = canvas.getContext('2d')!;
  const oom = data.actions.indexOf('oom');

  const frames = (k: number): string => (k < 0 ? '(no stack recorded)' : data.stacks[k]!.join('\n'));
  const describe = (i: number): string => {
    const a = data.actions[dev.action[i]!]!;
    const where = a === 'oom' ? `device free ${CCAViewer.bytes(dev.addr[i]!)}` : `0x${dev.addr[i]!.toString(16)}`;
    const tag = dev.tag[i]! >= 0 ? `  tag ${data.tags[dev.tag[i]!]}` : '';
    const regions = CCAViewer.regionsAt(dev, data, i);
    const inside = regions.length ? `  in ${regions.join(', ')}` : '';
    return `#${i}  ${a}  ${CCAViewer.bytes(dev.size[i]!)}  ${where}${tag}${inside}\n` +
      `allocated ${CCAViewer.bytes(dev.allocated[i]!)}, reserved ${CCAViewer.bytes(dev.reserved[i]!)}\n\n${frames(dev.stack[i]!)}`;
  };

  function draw(): void {
    const w = (canvas.width = canvas.clientWidth * devicePixelRatio);
    const h = (canvas.height = canvas.clientHeight * devicePixelRatio);
    ctx.clearRect(0, 0, w, h);
    if (dev.n === 0) {
      ctx.fillText('no history recorded on this device', 10, 20);
      cols = null;
      return;
    }
    cols = CCAViewer.columns(dev, lo, hi, w);
    let top = 1;
    for (let c = 0; c < cols.at.length; c++) top = Math.max(top, cols.allocated[c]!, cols.reserved[c]!);
    const y = (v: number) => h - 4 - (v / top) * (h - 24);
    const x = (c: number) => (c * w) / cols!.at.length;
    ctx.fillStyle = '#4c78a8';
    for (let c = 0; c < cols.at.length; c++) {
      if (cols.at[c]! < 0) continue;
      ctx.fillRect(x(c), y(cols.allocated[c]!), Math.max(1, w / cols.at.length), h - 4 - y(cols.allocated[c]!));
    }
    ctx.strokeStyle = '#999';
    ctx.beginPath();
    for (let c = 0; c < cols.at.length; c++) ctx.lineTo(x(c), y(cols.reserved[c]!));
    ctx.stroke();
    const index = (i: number) => ((i - lo) / (hi - lo)) * w;
    // Annotated regions: one thin row per name under the legend, runs in alternating shades.
    const rowH = 4 * devicePixelRatio;
    const runs = new Map<number, number>();
    for (const [name, from, to] of dev.raw.regions) {
      const run = (runs.get(name) ?? 0) + 1;
      runs.set(name, run);
      if (to <= lo || from >= hi || name >= 6) continue;
      ctx.fillStyle = run % 2 ? '#2ca02c' : '#98df8a';
      ctx.fillRect(index(Math.max(lo, from)), 18 * devicePixelRatio + name * (rowH + 1), Math.max(1, index(Math.min(hi, to)) - index(Math.max(lo, from))), rowH);
    }
    ctx.fillStyle = '#d62728';
    for (let i = lo; i < hi; i++) if (dev.action[i] === oom) ctx.fillRect(index(i), 0, 2, h);
    if (selected >= lo && selected < hi) {
      ctx.fillStyle = '#ff7f0e';
      ctx.fillRect(index(selected), 0, 2, h);
    }
    ctx.fillStyle = '#333';
    ctx.font = `${12 * devicePixelRatio}px sans-serif`;
    const regionLegend = data.regionNames.length ? `, green rows: ${data.regionNames.slice(0, 6).join(' / ')}` : '';
    ctx.fillText(`peak in view ${CCAViewer.bytes(top)}  (blue: allocated, grey: reserved, red: OOM${regionLegend})  events ${lo}..${hi - 1}`, 6, 14 * devicePixelRatio);
  }

  const eventAt = (clientX: number): number => {
    if (!cols) return -1;
    const r = canvas.getBoundingClientRect();
    const c = Math.floor(((clientX - r.left) / r.width) * cols.at.length);
    return cols.at[Math.max(0, Math.min(cols.at.length - 1, c))] ?? -1;
  };

  function showState(i: number): void {
    const live = CCAViewer.liveAt(dev, i, data.actions);
    const rows = [...live].sort((a, b) => b[1][0] - a[1][0]);
    const total = rows.reduce((n, r) => n + r[1][0], 0);
    const list = $('live');
    list.textContent = '';
    const head = document.createElement('div');
    head.textContent = `${rows.length} live allocations, ${CCAViewer.bytes(total)} (largest first; click for the stack)`;
    list.append(head);
    for (const [address, [size, stack]] of rows.slice(0, 200)) {
      const row = document.createElement('div');
      row.className = 'row';
      const top = stack >= 0 ? data.stacks[stack]![0] : '(no stack)';
      row.textContent = `${CCAViewer.bytes(size).padStart(12)}  0x${address.toString(16)}  ${top}`;
      row.onclick = () => ($('event').textContent = `live block 0x${address.toString(16)}, ${CCAViewer.bytes(size)}\n\n${frames(stack)}`);
      list.append(row);
    }
    drawSegments(i, live);
  }

  function drawSegments(i: number, live: Map<number, [number, number]>): void {
    const segs = CCAViewer.segmentsAt(dev, i, data.actions).slice(0, 400);
    const sc = $<HTMLCanvasElement>('segments');
    const rowH = 12;
    sc.style.height = `${Math.max(1, segs.length) * rowH}px`;
    const w = (sc.width = sc.clientWidth);
    sc.height = Math.max(1, segs.length) * rowH;
    const g = sc.getContext('2d')!;
    const addrs = [...live.keys()].sort((a, b) => a - b);
    const placed: { row: number; from: number; to: number; address: number }[] = [];
    segs.forEach((s, row) => {
      g.fillStyle = '#e8e8e8';
      g.fillRect(0, row * rowH + 1, w, rowH - 2);
      // Live allocations inside [address, address + total): binary search the first.
      let k = 0;
      let hiK = addrs.length;
      while (k < hiK) {
        const mid = (k + hiK) >> 1;
        if (addrs[mid]! < s.address) k = mid + 1;
        else hiK = mid;
      }
      g.fillStyle = '#4c78a8';
      for (; k < addrs.length && addrs[k]! < s.address + s.total; k++) {
        const a = addrs[k]!;
        const from = ((a - s.address) / s.total) * w;
        const to = ((a + live.get(a)![0] - s.address) / s.total) * w;
        g.fillRect(from, row * rowH + 1, Math.max(1, to - from - 0.5), rowH - 2);
        placed.push({ row, from, to, address: a });
      }
    });
    sc.onmousemove = (ev) => {
      const r = sc.getBoundingClientRect();
      const row = Math.floor((ev.clientY - r.top) / rowH);
      const xpos = ev.clientX - r.left;
      const hit = placed.find((p) => p.row === row && xpos >= p.from && xpos <= Math.max(p.to, p.from + 1));
      const seg = segs[row];
      if (hit) {
        const [size, stack] = live.get(hit.address)!;
        $('event').textContent = `live block 0x${hit.address.toString(16)}, ${CCAViewer.bytes(size)}\n\n${frames(stack)}`;
      } else if (seg) {
        $('event').textContent = `segment 0x${seg.address.toString(16)}, ${CCAViewer.bytes(seg.total)}`;
      }
    };
    $('segments-title').textContent = `${segs.length} segments after event #${i} (blue: live allocations; hover for the stack)`;
  }

  function select(i: number): void {
    selected = Math.max(-1, Math.min(dev.n - 1, i));
    $('event').textContent = selected < 0 ? 'the state when the history began' : describe(selected);
    showState(selected);
    draw();
  }

  canvas.onmousemove = (ev) => {
    const i = eventAt(ev.clientX);
    if (i >= 0) $('hover').textContent = describe(i).split('\n').slice(0, 3).join('  ');
  };
  canvas.onclick = (ev) => select(eventAt(ev.clientX));
  canvas.ondblclick = () => {
    lo = 0;
    hi = dev.n;
    draw();
  };
  canvas.onwheel = (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    const f = (ev.clientX - r.left) / r.width;
    const at = lo + f * (hi - lo);
    const span = Math.max(10, Math.min(dev.n, (hi - lo) * (ev.deltaY > 0 ? 1.25 : 0.8)));
    lo = Math.max(0, Math.round(at - f * span));
    hi = Math.min(dev.n, Math.round(lo + span));
    draw();
  };
  document.onkeydown = (ev) => {
    if (ev.target instanceof HTMLInputElement) return;
    if (ev.key === 'ArrowRight') select(selected + 1);
    if (ev.key === 'ArrowLeft') select(selected - 1);
  };
  deviceSelect.onchange = () => {
    dev = devices[Number(deviceSelect.value)]!;
    lo = 0;
    hi = dev.n;
    select(-1);
  };
  $<HTMLInputElement>('search').oninput = (ev) => {
    const q = (ev.target as HTMLInputElement).value;
    const hits = CCAViewer.search(dev, data, q);
    const box = $('results');
    box.textContent = q.trim() === '' ? '' : `${hits.length}${hits.length === 200 ? '+' : ''} events`;
    for (const i of hits) {
      const row = document.createElement('div');
      row.className = 'row';
      row.textContent = describe(i).split('\n')[0]!;
      row.onclick = () => select(i);
      box.append(row);
    }
  };
  $('settings').textContent = JSON.stringify(data.settings, null, 1);
  window.onresize = draw;
  select(-1);
}

if (typeof document !== 'undefined') main();
