// The offline viewer's page: draws and answers the user, over page-logic.ts (inlined
// before it, in one script, into the HTML that `cca viz` writes; no network, no library).
// A script, not a module: tsconfig.viewer.json compiles it with the DOM types; `main()`
// runs only where there is a document.

function main(): void {
  const data = JSON.parse(document.getElementById('cca-data')!.textContent!) as ViewerInput;
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const devices = data.devices.map((d) => CCAViewer.device(d, data.actions));
  document.title = `${data.title}: memory`;
  $('title').textContent = data.title;
  const deviceSelect = $<HTMLSelectElement>('device');
  const viewSelect = $<HTMLSelectElement>('view');
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
    const pool = dev.pool && dev.pool[i]! >= 0 ? `  ${dev.pools[dev.pool[i]!]!.name}` : '';
    const pools = dev.pools.map((p) => {
      const [al, re] = CCAViewer.poolAt(p, i);
      return `; ${p.name}: ${CCAViewer.bytes(al)} allocated of ${CCAViewer.bytes(re)} reserved`;
    }).join('');
    return `#${i}  ${a}  ${CCAViewer.bytes(dev.size[i]!)}  ${where}${pool}${tag}${inside}\n` +
      `allocated ${CCAViewer.bytes(dev.allocated[i]!)}, reserved ${CCAViewer.bytes(dev.reserved[i]!)}${pools}\n\n${frames(dev.stack[i]!)}`;
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
    const bands = viewSelect.value === 'pools' && dev.pools.length ? CCAViewer.poolBands(dev, cols) : null;
    let top = 1;
    for (let c = 0; c < cols.at.length; c++) {
      let stacked = cols.allocated[c]!;
      if (bands) stacked = bands.defaultAllocated[c]! + bands.envelope.reduce((n, e) => n + e[c]!, 0);
      top = Math.max(top, stacked, cols.reserved[c]!);
    }
    const y = (v: number) => h - 4 - (v / top) * (h - 24);
    const x = (c: number) => (c * w) / cols!.at.length;
    const colW = Math.max(1, w / cols.at.length);
    const bar = (c: number, from: number, height: number) => ctx.fillRect(x(c), y(from + height), colW, y(from) - y(from + height));
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
    const legend = bands
      ? `blue: default pools, grey: a private pool's reserved memory with its allocations inside (bottom up: ${bands.names.join(', ')}), line: reserved, red: OOM`
      : 'blue: allocated, grey: reserved, red: OOM';
    ctx.fillText(`peak in view ${CCAViewer.bytes(top)}  (${legend}${regionLegend})  events ${lo}..${hi - 1}`, 6, 14 * devicePixelRatio);
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
  // The private-pool view is offered where the device has a private pool, and chosen
  // from the start when one holds memory, as it is the one that explains such a file.
  const offerPoolView = () => {
    viewSelect.options[1]!.disabled = dev.pools.length === 0;
    viewSelect.value = dev.pools.length ? 'pools' : 'allocated';
  };
  viewSelect.onchange = draw;
  deviceSelect.onchange = () => {
    dev = devices[Number(deviceSelect.value)]!;
    lo = 0;
    hi = dev.n;
    offerPoolView();
    select(-1);
    whatIfPanel.deviceChanged();
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
  offerPoolView();
  select(-1);
  whatIfPanel(data, () => dev);
}

if (typeof document !== 'undefined') main();
