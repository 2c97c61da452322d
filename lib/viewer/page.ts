// The offline viewer's page: draws and answers the user, over page-logic.ts (inlined
// before it, in one script, into the HTML that `cca viz` writes; no network, no library).
// A script, not a module: tsconfig.viewer.json compiles it with the DOM types; `main()`
// runs only where there is a document.

/** What the page shows now: the device, the window of events in view, the selection. */
interface PageState {
  readonly data: ViewerInput;
  readonly devices: Dev[];
  dev: Dev;
  lo: number;
  hi: number;
  selected: number;
  /** The timeline's columns as last drawn (null before, or with no events). */
  cols: Columns | null;
  readonly canvas: HTMLCanvasElement;
  readonly ctx: CanvasRenderingContext2D;
  readonly viewSelect: HTMLSelectElement;
  /** The action index of 'oom' in the data's action list. */
  readonly oom: number;
}

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function stackText(data: ViewerInput, k: number): string {
  return k < 0 ? '(no stack recorded)' : data.stacks[k]!.join('\n');
}

/** Event i in three lines and its stack: what, where, in which pool and regions; the totals. */
function describeEvent(p: PageState, i: number): string {
  const { data, dev } = p;
  const a = data.actions[dev.action[i]!]!;
  const where = a === 'oom' ? `device free ${CCAViewer.bytes(dev.addr[i]!)}` : `0x${dev.addr[i]!.toString(16)}`;
  const tag = dev.tag[i]! >= 0 ? `  tag ${data.tags[dev.tag[i]!]}` : '';
  const regions = CCAViewer.regionsAt(dev, data, i);
  const inside = regions.length ? `  in ${regions.join(', ')}` : '';
  const pool = dev.pool && dev.pool[i]! >= 0 ? `  ${dev.pools[dev.pool[i]!]!.name}` : '';
  const pools = dev.pools.map((q) => {
    const [al, re] = CCAViewer.poolAt(q, i);
    return `; ${q.name}: ${CCAViewer.bytes(al)} allocated of ${CCAViewer.bytes(re)} reserved`;
  }).join('');
  return `#${i}  ${a}  ${CCAViewer.bytes(dev.size[i]!)}  ${where}${pool}${tag}${inside}\n` +
    `allocated ${CCAViewer.bytes(dev.allocated[i]!)}, reserved ${CCAViewer.bytes(dev.reserved[i]!)}${pools}\n\n${stackText(data, dev.stack[i]!)}`;
}

/** The timeline's y and x scales and one column's bar, for the canvas as sized now. */
function timelineScale(p: PageState, cols: Columns, top: number, w: number, h: number) {
  const y = (v: number) => h - 4 - (v / top) * (h - 24);
  const x = (c: number) => (c * w) / cols.at.length;
  const colW = Math.max(1, w / cols.at.length);
  const bar = (c: number, from: number, height: number) => p.ctx.fillRect(x(c), y(from + height), colW, y(from) - y(from + height));
  return { x, y, bar };
}

/** Annotated regions: one thin row per name under the legend, runs in alternating shades. */
function drawRegions(p: PageState, index: (i: number) => number): void {
  const { ctx, lo, hi } = p;
  const rowH = 4 * devicePixelRatio;
  const runs = new Map<number, number>();
  for (const [name, from, to] of p.dev.raw.regions) {
    const run = (runs.get(name) ?? 0) + 1;
    runs.set(name, run);
    if (to <= lo || from >= hi || name >= 6) continue;
    ctx.fillStyle = run % 2 ? '#2ca02c' : '#98df8a';
    ctx.fillRect(index(Math.max(lo, from)), 18 * devicePixelRatio + name * (rowH + 1), Math.max(1, index(Math.min(hi, to)) - index(Math.max(lo, from))), rowH);
  }
}

/** The timeline: allocated memory (or, in the pools view, each pool's) as bars, reserved as a
 *  line, regions, OOMs and the selection as marks, and the legend. */
function drawTimeline(p: PageState): void {
  const { canvas, ctx, dev, lo, hi } = p;
  const w = (canvas.width = canvas.clientWidth * devicePixelRatio);
  const h = (canvas.height = canvas.clientHeight * devicePixelRatio);
  ctx.clearRect(0, 0, w, h);
  if (dev.n === 0) {
    ctx.fillText('no history recorded on this device', 10, 20);
    p.cols = null;
    return;
  }
  const cols = (p.cols = CCAViewer.columns(dev, lo, hi, w));
  const bands = p.viewSelect.value === 'pools' && dev.pools.length ? CCAViewer.poolBands(dev, cols) : null;
  let top = 1;
  for (let c = 0; c < cols.at.length; c++) {
    let stacked = cols.allocated[c]!;
    if (bands) stacked = bands.defaultAllocated[c]! + bands.envelope.reduce((n, e) => n + e[c]!, 0);
    top = Math.max(top, stacked, cols.reserved[c]!);
  }
  const { x, y, bar } = timelineScale(p, cols, top, w, h);
  ctx.fillStyle = '#4c78a8';
  for (let c = 0; c < cols.at.length; c++) {
    if (cols.at[c]! < 0) continue;
    bar(c, 0, bands ? bands.defaultAllocated[c]! : cols.allocated[c]!);
  }
  if (bands) {
    // Above the default pools' memory, each pool's envelope (grey, what it reserved) with
    // its live allocations inside at half strength, as memory_viz draws them.
    for (let c = 0; c < cols.at.length; c++) {
      if (cols.at[c]! < 0) continue;
      let base = bands.defaultAllocated[c]!;
      bands.envelope.forEach((env, k) => {
        ctx.fillStyle = '#c7c7c7';
        bar(c, base, env[c]!);
        ctx.fillStyle = POOL_COLOURS[k % POOL_COLOURS.length]!;
        bar(c, base, bands.allocated[k]![c]!);
        base += env[c]!;
      });
    }
  }
  ctx.strokeStyle = '#999';
  ctx.beginPath();
  for (let c = 0; c < cols.at.length; c++) ctx.lineTo(x(c), y(cols.reserved[c]!));
  ctx.stroke();
  const index = (i: number) => ((i - lo) / (hi - lo)) * w;
  drawRegions(p, index);
  ctx.fillStyle = '#d62728';
  for (let i = lo; i < hi; i++) if (dev.action[i] === p.oom) ctx.fillRect(index(i), 0, 2, h);
  if (p.selected >= lo && p.selected < hi) {
    ctx.fillStyle = '#ff7f0e';
    ctx.fillRect(index(p.selected), 0, 2, h);
  }
  ctx.fillStyle = '#333';
  ctx.font = `${12 * devicePixelRatio}px sans-serif`;
  const regionLegend = p.data.regionNames.length ? `, green rows: ${p.data.regionNames.slice(0, 6).join(' / ')}` : '';
  const legend = bands
    ? `blue: default pools, grey: a private pool's reserved memory with its allocations inside (bottom up: ${bands.names.join(', ')}), line: reserved, red: OOM`
    : 'blue: allocated, grey: reserved, red: OOM';
  ctx.fillText(`peak in view ${CCAViewer.bytes(top)}  (${legend}${regionLegend})  events ${lo}..${hi - 1}`, 6, 14 * devicePixelRatio);
}

/** The event under a timeline column at clientX, or -1. */
function eventAt(p: PageState, clientX: number): number {
  if (!p.cols) return -1;
  const r = p.canvas.getBoundingClientRect();
  const c = Math.floor(((clientX - r.left) / r.width) * p.cols.at.length);
  return p.cols.at[Math.max(0, Math.min(p.cols.at.length - 1, c))] ?? -1;
}

/** The live allocations after event i, largest first, and the segments they lie in. */
function showState(p: PageState, i: number): void {
  const live = CCAViewer.liveAt(p.dev, i, p.data.actions);
  const rows = [...live].sort((a, b) => b[1][0] - a[1][0]);
  const total = rows.reduce((n, r) => n + r[1][0], 0);
  const list = byId('live');
  list.textContent = '';
  const head = document.createElement('div');
  head.textContent = `${rows.length} live allocations, ${CCAViewer.bytes(total)} (largest first; click for the stack)`;
  list.append(head);
  for (const [address, [size, stack]] of rows.slice(0, 200)) {
    const row = document.createElement('div');
    row.className = 'row';
    const top = stack >= 0 ? p.data.stacks[stack]![0] : '(no stack)';
    row.textContent = `${CCAViewer.bytes(size).padStart(12)}  0x${address.toString(16)}  ${top}`;
    row.onclick = () => (byId('event').textContent = `live block 0x${address.toString(16)}, ${CCAViewer.bytes(size)}\n\n${stackText(p.data, stack)}`);
    list.append(row);
  }
  drawSegments(p, i, live);
}

/** Where the live allocations of `addrs` (sorted) inside [address, address + total) begin. */
function firstInside(addrs: number[], address: number): number {
  let k = 0;
  let hiK = addrs.length;
  while (k < hiK) {
    const mid = (k + hiK) >> 1;
    if (addrs[mid]! < address) k = mid + 1;
    else hiK = mid;
  }
  return k;
}

/** One row per segment after event i, its live allocations in blue; hover for a stack. */
function drawSegments(p: PageState, i: number, live: Map<number, [number, number]>): void {
  const segs = CCAViewer.segmentsAt(p.dev, i, p.data.actions).slice(0, 400);
  const sc = byId<HTMLCanvasElement>('segments');
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
    g.fillStyle = '#4c78a8';
    for (let k = firstInside(addrs, s.address); k < addrs.length && addrs[k]! < s.address + s.total; k++) {
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
    const hit = placed.find((q) => q.row === row && xpos >= q.from && xpos <= Math.max(q.to, q.from + 1));
    const seg = segs[row];
    if (hit) {
      const [size, stack] = live.get(hit.address)!;
      byId('event').textContent = `live block 0x${hit.address.toString(16)}, ${CCAViewer.bytes(size)}\n\n${stackText(p.data, stack)}`;
    } else if (seg) {
      byId('event').textContent = `segment 0x${seg.address.toString(16)}, ${CCAViewer.bytes(seg.total)}`;
    }
  };
  byId('segments-title').textContent = `${segs.length} segments after event #${i} (blue: live allocations; hover for the stack)`;
}

function selectEvent(p: PageState, i: number): void {
  p.selected = Math.max(-1, Math.min(p.dev.n - 1, i));
  byId('event').textContent = p.selected < 0 ? 'the state when the history began' : describeEvent(p, p.selected);
  showState(p, p.selected);
  drawTimeline(p);
}

/** Hover, click, double click (the whole history), the wheel (zoom) and the arrow keys. */
function bindTimeline(p: PageState): void {
  const { canvas } = p;
  canvas.onmousemove = (ev) => {
    const i = eventAt(p, ev.clientX);
    if (i >= 0) byId('hover').textContent = describeEvent(p, i).split('\n').slice(0, 3).join('  ');
  };
  canvas.onclick = (ev) => selectEvent(p, eventAt(p, ev.clientX));
  canvas.ondblclick = () => {
    p.lo = 0;
    p.hi = p.dev.n;
    drawTimeline(p);
  };
  canvas.onwheel = (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    const f = (ev.clientX - r.left) / r.width;
    const at = p.lo + f * (p.hi - p.lo);
    const span = Math.max(10, Math.min(p.dev.n, (p.hi - p.lo) * (ev.deltaY > 0 ? 1.25 : 0.8)));
    p.lo = Math.max(0, Math.round(at - f * span));
    p.hi = Math.min(p.dev.n, Math.round(p.lo + span));
    drawTimeline(p);
  };
  document.onkeydown = (ev) => {
    if (ev.target instanceof HTMLInputElement) return;
    if (ev.key === 'ArrowRight') selectEvent(p, p.selected + 1);
    if (ev.key === 'ArrowLeft') selectEvent(p, p.selected - 1);
  };
}

// The private-pool view is offered where the device has a private pool, and chosen from the
// start when one holds memory, as it is the one that explains such a file.
function offerPoolView(p: PageState): void {
  p.viewSelect.options[1]!.disabled = p.dev.pools.length === 0;
  p.viewSelect.value = p.dev.pools.length ? 'pools' : 'allocated';
}

/** The device and view choices, and the search box. */
function bindControls(p: PageState, deviceSelect: HTMLSelectElement): void {
  p.viewSelect.onchange = () => drawTimeline(p);
  deviceSelect.onchange = () => {
    p.dev = p.devices[Number(deviceSelect.value)]!;
    p.lo = 0;
    p.hi = p.dev.n;
    offerPoolView(p);
    selectEvent(p, -1);
    whatIfPanel.deviceChanged();
  };
  byId<HTMLInputElement>('search').oninput = (ev) => {
    const q = (ev.target as HTMLInputElement).value;
    const hits = CCAViewer.search(p.dev, p.data, q);
    const box = byId('results');
    box.textContent = q.trim() === '' ? '' : `${hits.length}${hits.length === 200 ? '+' : ''} events`;
    for (const i of hits) {
      const row = document.createElement('div');
      row.className = 'row';
      row.textContent = describeEvent(p, i).split('\n')[0]!;
      row.onclick = () => selectEvent(p, i);
      box.append(row);
    }
  };
}

function main(): void {
  const data = JSON.parse(document.getElementById('cca-data')!.textContent!) as ViewerInput;
  const devices = data.devices.map((d) => CCAViewer.device(d, data.actions));
  document.title = `${data.title}: memory`;
  byId('title').textContent = data.title;
  const deviceSelect = byId<HTMLSelectElement>('device');
  // Device -1 is pinned host memory (PyTorch 2.14's host_segments / host_traces).
  const label = (n: number): string => (n === -1 ? 'pinned host memory' : `device ${n}`);
  devices.forEach((d, k) => deviceSelect.add(new Option(`${label(d.raw.device)} (${d.n} events)`, String(k))));
  // Like memory_viz: start on the device with the longest history.
  const dev = devices.reduce((best, d) => (d.n > best.n ? d : best), devices[0]!);
  deviceSelect.value = String(devices.indexOf(dev));
  const canvas = byId<HTMLCanvasElement>('timeline');
  const p: PageState = {
    data, devices, dev, lo: 0, hi: dev.n, selected: -1, cols: null, canvas, ctx: canvas.getContext('2d')!,
    viewSelect: byId<HTMLSelectElement>('view'), oom: data.actions.indexOf('oom'),
  };
  bindTimeline(p);
  bindControls(p, deviceSelect);
  byId('settings').textContent = JSON.stringify(data.settings, null, 1);
  window.onresize = () => drawTimeline(p);
  offerPoolView(p);
  selectEvent(p, -1);
  whatIfPanel(data, () => p.dev);
}

if (typeof document !== 'undefined') main();
