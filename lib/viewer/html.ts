// The offline viewer as one self-contained HTML file: styles, the page script and the data
// inline; nothing is fetched, so it opens from disk on an air-gapped machine.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Snapshot } from '../snapshot/types.js';
import { viewerData } from './model.js';

function builtScript(name: string): string {
  // Built by tsconfig.viewer.json into dist/viewer/, next to this file once built; from the
  // sources (tests), the built copy.
  for (const rel of [`./${name}`, `../../dist/viewer/${name}`]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return readFileSync(path, 'utf8');
  }
  throw new Error(`the viewer page script ${name} is not built: run npm run build:ts`);
}

/** The page's logic, then its drawing: two scripts of one global scope, run as one. */
const pageScript = (): string => `${builtScript('page-logic.js')}\n${builtScript('page.js')}`;

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
</main>`;

export function viewerHtml(snapshot: Snapshot, title: string): string {
  const data = viewerData(snapshot, title);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>${STYLE}</style></head>
<body>${BODY}
<script id="cca-data" type="application/json">${inlineJson(data)}</script>
<script>${pageScript()}</script>
</body></html>
`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
