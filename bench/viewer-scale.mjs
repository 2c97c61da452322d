// The offline viewer at a million events, in Chromium (Debian's, driven by playwright-core):
// HTML size and write time, page load until the first draw, a zoom redraw, and a click
// near the end (the state rebuilt from checkpoints).
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { viewerHtml } from '../dist/viewer/html.js';
import { freshState, machine, recordMillionEvents } from './common.mjs';

const CHROMIUM = process.env.CCA_CHROMIUM ?? '/usr/bin/chromium';
// --pools N: every odd allocation in one of N MemPools, drawn in the private-pool view.
const poolsArg = process.argv.indexOf('--pools');
const pools = poolsArg > 0 ? Number(process.argv[poolsArg + 1]) : 0;
freshState();
const { snap, keep } = recordMillionEvents({ tagged: true, pools });
const n = snap.device_traces[0].length;
let t0 = performance.now();
const html = viewerHtml(snap, 'scale');
const buildMs = performance.now() - t0;
const file = join(tmpdir(), 'cca-viewer-scale.html');
writeFileSync(file, html);

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
t0 = performance.now();
await page.goto(`file://${file}`);
await page.waitForFunction(() => document.getElementById('live').children.length > 0);
const loadMs = performance.now() - t0;
const box = await page.locator('#timeline').boundingBox();
const timed = async (action) => {
  const start = await page.evaluate(() => performance.now());
  await action();
  // Two animation frames: the work and the paint it triggered are done.
  return (await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now())))))) - start;
};
const zoomMs = await timed(() => page.mouse.wheel(0, -100).then(() => page.mouse.move(box.x + box.width / 2, box.y + box.height / 2)));
await page.mouse.dblclick(box.x + 5, box.y + 5);
const clickLateMs = await timed(() => page.mouse.click(box.x + box.width * 0.97, box.y + box.height / 2));
const clickAgainMs = await timed(() => page.mouse.click(box.x + box.width * 0.96, box.y + box.height / 2));
const searchMs = await timed(() => page.fill('#search', 'odd'));
// What-if in the page: the whole history replayed in the Web Worker on the wasm engine (the
// first request also decodes the embedded recording).
const whatIfMs = async (settings) => {
  await page.fill('#wi-settings', settings);
  const start = await page.evaluate(() => performance.now());
  await page.click('#wi-run');
  await page.waitForFunction((want) => {
    const t = document.getElementById('what-if-result').textContent;
    return t !== '' && JSON.parse(t).settings === want;
  }, settings, { timeout: 300_000 });
  return (await page.evaluate(() => performance.now())) - start;
};
const hasWhatIf = (await page.locator('#cca-what-if').count()) > 0;
const whatIfFirst = hasWhatIf ? await whatIfMs('expandable_segments:True') : NaN;
const whatIfNext = hasWhatIf ? await whatIfMs('max_split_size_mb:64') : NaN;
await browser.close();
for (const b of keep) b.free();

console.log(`offline viewer at ${n} events${pools ? `, ${pools} MemPools (private-pool view)` : ''} (${machine()}; ${CHROMIUM})`);
const whatIfBytes = (/<script id="cca-what-if"[^>]*>[^<]*<\/script>/.exec(html)?.[0].length ?? 0);
console.log(`HTML: ${(html.length / 2 ** 20).toFixed(1)} MiB (the what-if panel's input ${(whatIfBytes / 2 ** 20).toFixed(1)} MiB of it: ` +
  `the recording gzip'd and the wasm engine), built in ${buildMs.toFixed(0)} ms`);
console.log(`load until the first draw and state: ${loadMs.toFixed(0)} ms`);
console.log(`zoom (wheel) redraw: ${zoomMs.toFixed(0)} ms`);
console.log(`click near the end (first: replays to it, taking checkpoints): ${clickLateMs.toFixed(0)} ms; next click: ${clickAgainMs.toFixed(0)} ms`);
console.log(`search 'odd' (tag), first 200 results listed: ${searchMs.toFixed(0)} ms`);
console.log(hasWhatIf ? `what-if in the page (wasm, Web Worker): first replay ${whatIfFirst.toFixed(0)} ms (with decoding), next ${whatIfNext.toFixed(0)} ms`
  : 'what-if: not in this file (the wasm engine is not built)');
