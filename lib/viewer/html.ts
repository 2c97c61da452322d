// The offline viewer as one self-contained HTML file: styles, the page script and the data
// inline; nothing is fetched, so it opens from disk on an air-gapped machine.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Snapshot } from '../snapshot/types.js';
import { viewerData } from './model.js';
import { wasmEnginePath } from '../replay/wasm-engine.js';
import { decidedRecording } from '../replay/what-if.js';
import { toTransfer } from '../replay/recording-transfer.js';
import { transferToText } from '../replay/recording-text.js';
import { replayEngine } from '../replay/engine.js';

function builtScript(name: string): string {
  // Built by tsconfig.viewer.json into dist/viewer/, next to this file once built; from the
  // sources (tests), the built copy.
  for (const rel of [`./${name}`, `../../dist/viewer/${name}`]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return readFileSync(path, 'utf8');
  }
  throw new Error(`the viewer page script ${name} is not built: run npm run build:ts`);
}

/** The page's logic, its drawing and its what-if panel: scripts of one global scope, run as one. */
const pageScript = (): string => ['page-logic.js', 'page.js', 'what-if-panel.js'].map(builtScript).join('\n');

/** A script's text made safe inside <script>: no `</script` can end the element early (it can
 *  only appear in strings, comments and regular expressions, where `<\/` reads the same). */
const inlineScript = (js: string): string => js.replace(/<\/script/gi, '<\\/script');

/**
 * What the what-if panel replays: per device with history, its recording (read once here, its
 * private pools decided as whatIf decides them) as text, the recorded settings and the device
 * size; the worker's source (the wasm engine, then the replay bundle). Null where the wasm
 * engine is not built.
 */
function whatIfInput(snapshot: Snapshot, initial: string | null): object | null {
  const engine = wasmEnginePath();
  if (engine === null) return null;
  const devices = snapshot.device_traces.flatMap((trace, device) => {
    if (trace.length === 0) return [];
    const rec = decidedRecording(snapshot, device, 'wasm');
    return [{ device, settings: rec.settings, capacityBytes: rec.capacity ?? 256 * 2 ** 30, recording: transferToText(toTransfer(rec), gzipSync) }];
  });
  return { worker: `${readFileSync(engine, 'utf8')}\n${builtScript('what-if-worker.bundle.js')}`, initial, devices };
}

/** `<` escaped everywhere, so no string in the data can close the script element. */
const inlineJson = (v: unknown): string => JSON.stringify(v).replace(/</g, '\\u003c');

const STYLE = `
body { font: 13px system-ui, sans-serif; margin: 0; color: #222; }
header { display: flex; gap: 12px; align-items: center; padding: 8px 12px; background: #f4f4f4; border-bottom: 1px solid #ddd; }
header h1 { font-size: 15px; margin: 0; }
#search { width: 320px; }
#timeline { width: 100%; height: 260px; display: block; cursor: crosshair; }
#hover { padding: 2px 12px; height: 18px; color: #555; white-space: pre; overflow: hidden; }
main { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; padding: 0 12px 12px; }
section { min-width: 0; }
h2 { font-size: 13px; margin: 8px 0 4px; }
pre, .list { font: 12px ui-monospace, monospace; margin: 0; background: #fafafa; border: 1px solid #eee; padding: 6px; max-height: 320px; overflow: auto; white-space: pre; }
.row { cursor: pointer; } .row:hover { background: #e8f0fa; }
#segments { width: 100%; display: block; }
#segwrap { max-height: 360px; overflow: auto; border: 1px solid #eee; }
#what-if { padding: 0 12px 12px; }
.wi-row { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 4px 0; }
#what-if-chart { width: 100%; height: 180px; display: block; border: 1px solid #eee; }
`;

const BODY = `
<header>
  <h1 id="title"></h1>
  <select id="device"></select>
  <select id="view"><option value="allocated">Allocated memory</option><option value="pools">Allocated memory (incl. private pools)</option></select>
  <input id="search" placeholder="search: 0x address, frame or tag text">
  <span>wheel: zoom · double-click: all · click: state at that event · ←/→: step</span>
</header>
<canvas id="timeline"></canvas>
<div id="hover"></div>
<main>
  <section>
    <h2>Event</h2><pre id="event"></pre>
    <h2>Search results</h2><div id="results" class="list"></div>
    <h2>Allocator settings</h2><pre id="settings"></pre>
  </section>
  <section>
    <h2>Live allocations</h2><div id="live" class="list"></div>
    <h2 id="segments-title">Segments</h2><div id="segwrap"><canvas id="segments"></canvas></div>
  </section>
</main>
<section id="what-if">
  <h2>What if: this history replayed under other settings (our allocator, compiled to WebAssembly, in this page)</h2>
  <div class="wi-row">
    <label><input type="checkbox" id="wi-expandable"> expandable_segments</label>
    <label>max_split_size_mb <input id="wi-max-split" type="number" min="1" size="6"></label>
    <label>garbage_collection_threshold <input id="wi-gc" type="number" min="0" max="1" step="0.05" size="5"></label>
    <label>roundup_power2_divisions <input id="wi-roundup" placeholder="4 or [256:1,&gt;:8]" size="16"></label>
    <label>device GiB <input id="wi-capacity" type="number" min="0.001" step="any" size="8"></label>
  </div>
  <div class="wi-row"><label>settings <input id="wi-settings" size="70" spellcheck="false"></label>
    <button id="wi-run">Replay</button> <span id="wi-status"></span></div>
  <canvas id="what-if-chart"></canvas>
  <pre id="what-if-summary"></pre>
  <pre id="what-if-result"></pre>
</section>`;

/**
 * The viewer for `snapshot`. `whatIf`: settings (PYTORCH_CUDA_ALLOC_CONF syntax) the page
 * replays as it opens (`cca viz --what-if`), checked here first.
 */
export function viewerHtml(snapshot: Snapshot, title: string, whatIf: string | null = null): string {
  if (whatIf !== null) replayEngine().checkSettings(whatIf);
  const data = viewerData(snapshot, title);
  const wi = whatIfInput(snapshot, whatIf);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>${STYLE}</style></head>
<body>${BODY}
<script id="cca-data" type="application/json">${inlineJson(data)}</script>
${wi ? `<script id="cca-what-if" type="application/json">${inlineJson(wi)}</script>` : ''}
<script>${inlineScript(pageScript())}</script>
</body></html>
`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
