// The viewer's what-if panel: pick allocator settings and a device size, replay the device's
// history under them in a Web Worker on the wasm engine (both inlined in the page, so it works
// offline), and draw our reserved memory over the recorded one with the numbers `cca replay
// --what-if` prints for that setting. The last result is also written as JSON into
// #what-if-result ({ settings, peakReservedBytes, ooms, ... }) for scripts and tests.
// A script, not a module (tsconfig.viewer.json), inlined after page.ts; page.ts calls
// whatIfPanel() with a getter of the device it shows.

interface WhatIfInput {
  /** The engine's script, then the worker's bundle: the worker's whole source. */
  worker: string;
  /** The settings to replay on opening (`cca viz --what-if CONF`), or null. */
  initial: string | null;
  devices: { device: number; settings: string; capacityBytes: number; recording: unknown }[];
}

// lib/replay/what-if-row.ts's WhatIfRow as it arrives from the worker: a script cannot import
// it (tsconfig.viewer.json compiles lib/viewer alone), and the Chromium test holds the two
// together by comparing the page's numbers with what-if's.
interface WhatIfRowOut {
  settings: string;
  peakReserved: number;
  endReserved: number;
  deviceMallocs: number;
  largestFreeAtPeak: number;
  fragmentationAtPeak: number;
  ooms: { recorded: number; here: number };
  stoppedAt: number | null;
  ms: number;
}

type WhatIfReply = { id: number; row: WhatIfRowOut; series: Float64Array } | { id: number; error: { message: string; code?: string } };

/** A config string's `key:value` parts, commas inside [...] kept (roundup_power2_divisions). */
function settingsParts(conf: string): [string, string][] {
  const parts: [string, string][] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= conf.length; i++) {
    const c = conf[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if ((c === ',' && depth === 0) || i === conf.length) {
      const part = conf.slice(start, i).trim();
      const colon = part.indexOf(':');
      if (part) parts.push(colon < 0 ? [part, ''] : [part.slice(0, colon).trim(), part.slice(colon + 1).trim()]);
      start = i + 1;
    }
  }
  return parts;
}

/** `conf` with `key` set to `value` ('' removes it), the other parts as they were. */
function withSetting(conf: string, key: string, value: string): string {
  const parts = settingsParts(conf).filter(([k]) => k !== key);
  if (value !== '') parts.push([key, value]);
  return parts.map(([k, v]) => `${k}:${v}`).join(',');
}

function whatIfPanel(data: ViewerInput, current: () => Dev): void {
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const source = document.getElementById('cca-what-if');
  const status = $('wi-status');
  if (source === null) {
    status.textContent = 'not available in this file: the wasm engine was not built when it was written (npm run build:wasm)';
    $<HTMLButtonElement>('wi-run').disabled = true;
    return;
  }
  const input = JSON.parse(source.textContent!) as WhatIfInput;
  const worker = new Worker(URL.createObjectURL(new Blob([input.worker], { type: 'text/javascript' })));
  const settingsBox = $<HTMLInputElement>('wi-settings');
  const capacityBox = $<HTMLInputElement>('wi-capacity');
  const chart = $<HTMLCanvasElement>('what-if-chart');
  const GiB = 2 ** 30;
  let asked = 0;
  let last: { dev: Dev; row: WhatIfRowOut; series: Float64Array } | null = null;

  const recordingOf = (dev: Dev) => input.devices.find((d) => d.device === dev.raw.device);
  const controls: [string, string, (v: string) => string][] = [
    ['wi-expandable', 'expandable_segments', (v) => v],
    ['wi-max-split', 'max_split_size_mb', (v) => v],
    ['wi-gc', 'garbage_collection_threshold', (v) => v],
    ['wi-roundup', 'roundup_power2_divisions', (v) => v],
  ];
  // Each control writes its option into the settings string; the string is what replays.
  for (const [id, key] of controls) {
    const el = $<HTMLInputElement>(id);
    el.onchange = () => {
      const value = el.type === 'checkbox' ? (el.checked ? 'True' : '') : el.value.trim();
      settingsBox.value = withSetting(settingsBox.value, key, value);
    };
  }
  const showControls = () => {
    const parts = new Map(settingsParts(settingsBox.value));
    $<HTMLInputElement>('wi-expandable').checked = parts.get('expandable_segments') === 'True';
    for (const [id, key] of controls.slice(1)) $<HTMLInputElement>(id).value = parts.get(key) ?? '';
  };
  settingsBox.onchange = showControls;

  const reset = () => {
    const rec = recordingOf(current());
    settingsBox.value = input.initial ?? rec?.settings ?? '';
    capacityBox.value = rec ? String(+(rec.capacityBytes / GiB).toFixed(3)) : '';
    showControls();
    last = null;
    draw();
  };

  function draw(): void {
    const w = (chart.width = chart.clientWidth * devicePixelRatio);
    const h = (chart.height = chart.clientHeight * devicePixelRatio);
    const ctx = chart.getContext('2d')!;
    ctx.clearRect(0, 0, w, h);
    const dev = current();
    if (dev.n === 0) return;
    const ours = last && last.dev === dev ? last.series : null;
    let top = 1;
    for (let i = 0; i < dev.n; i++) top = Math.max(top, dev.reserved[i]!, ours && !Number.isNaN(ours[i]!) ? ours[i]! : 0);
    const y = (v: number) => h - 4 - (v / top) * (h - 24);
    // One column per pixel, each the largest value among its entries: no peak is lost.
    const line = (series: Float64Array, color: string) => {
      ctx.strokeStyle = color;
      ctx.beginPath();
      let started = false;
      for (let c = 0; c < w; c++) {
        const from = Math.floor((c * dev.n) / w);
        const to = Math.max(from + 1, Math.floor(((c + 1) * dev.n) / w));
        let v = -1;
        for (let i = from; i < to && i < dev.n; i++) if (!Number.isNaN(series[i]!)) v = Math.max(v, series[i]!);
        if (v < 0) continue;
        if (started) ctx.lineTo(c, y(v));
        else ctx.moveTo(c, y(v));
        started = true;
      }
      ctx.stroke();
    };
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    line(dev.reserved, '#888');
    const oom = data.actions.indexOf('oom');
    ctx.fillStyle = '#d33';
    for (let i = 0; i < dev.n; i++) if (dev.action[i] === oom) ctx.fillRect((i * w) / dev.n, 0, Math.max(1, devicePixelRatio), 8);
    if (ours && last) {
      line(ours, '#e67e00');
      if (last.row.stoppedAt !== null) ctx.fillRect((last.row.stoppedAt * w) / dev.n, 0, 2 * devicePixelRatio, h);
    }
    ctx.fillStyle = '#222';
    ctx.font = `${11 * devicePixelRatio}px system-ui`;
    ctx.fillText(`reserved: recorded (grey)${ours ? ', replayed (orange)' : ''}; top ${CCAViewer.bytes(top)}`, 6, 12 * devicePixelRatio);
  }

  const run = () => {
    const dev = current();
    const rec = recordingOf(dev);
    if (!rec) {
      status.textContent = 'no history on this device to replay';
      return;
    }
    const gib = Number(capacityBox.value);
    if (!(gib > 0)) {
      status.textContent = `device size must be a positive number of GiB, not "${capacityBox.value}"`;
      return;
    }
    const id = ++asked;
    status.textContent = `replaying ${dev.n} entries under '${settingsBox.value || '(defaults)'}'...`;
    worker.onmessage = (e: MessageEvent<WhatIfReply>) => {
      const a = e.data;
      if (a.id !== asked) return;  // a newer request is on its way
      if ('error' in a) {
        status.textContent = `refused: ${a.error.message}${a.error.code ? ` (${a.error.code})` : ''}`;
        return;
      }
      last = { dev, row: a.row, series: a.series };
      const r = a.row;
      const recordedPeak = dev.reserved.reduce((m, v) => Math.max(m, v), dev.raw.reservedAtStart);
      status.textContent = `done in ${(r.ms / 1000).toFixed(2)} s (wasm engine)`;
      $('what-if-summary').textContent =
        `settings '${r.settings || '(defaults)'}' on a ${CCAViewer.bytes(Math.round(gib * GiB))} device\n` +
        `peak reserved ${CCAViewer.bytes(r.peakReserved)} (recorded ${CCAViewer.bytes(recordedPeak)}), end ${CCAViewer.bytes(r.endReserved)}\n` +
        `segments allocated ${r.deviceMallocs}; at the peak the largest free block ${CCAViewer.bytes(r.largestFreeAtPeak)}, ` +
        `fragmentation ${(100 * r.fragmentationAtPeak).toFixed(1)}%\n` +
        `OOMs: ${r.stoppedAt !== null ? `an allocation the program made does not fit: stops at entry ${r.stoppedAt}` :
          `${r.ooms.here} of the ${r.ooms.recorded} recorded happen here too`}`;
      $('what-if-result').textContent = JSON.stringify({
        settings: r.settings, capacityBytes: Math.round(gib * GiB), peakReservedBytes: r.peakReserved, endReservedBytes: r.endReserved,
        deviceMallocs: r.deviceMallocs, ooms: r.ooms, stoppedAt: r.stoppedAt,
      });
      draw();
    };
    worker.postMessage({ id, device: rec.device, recording: rec.recording, settings: settingsBox.value, capacityBytes: Math.round(gib * GiB) });
  };
  $<HTMLButtonElement>('wi-run').onclick = run;
  window.addEventListener('resize', draw);
  reset();
  if (input.initial !== null) run();
  whatIfPanel.deviceChanged = reset;
}
whatIfPanel.deviceChanged = (): void => {};
