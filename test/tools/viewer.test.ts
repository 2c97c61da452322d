// The offline viewer: its data and page logic in Node (the page script run in a VM
// context), then the real page in Chromium: it draws, answers clicks and search, and asks
// for nothing over the network.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Browser, chromium } from 'playwright-core';
import { CudaOutOfMemoryError, MemPool, cuda, loadSnapshot, memory, use_mem_pool } from '../../lib/index.js';
import { viewerData } from '../../lib/viewer/model.js';
import { viewerHtml } from '../../lib/viewer/html.js';
import { timeline } from '../../lib/analysis/timeline.js';
import { poolTimeline, type PoolSeries } from '../../lib/analysis/pool-timeline.js';
import type { Snapshot } from '../../lib/snapshot/types.js';
import { KiB, MiB, freshSim } from '../support/helpers.js';
import { tempDir } from '../support/temp-dir.js';
import { wasmBuilt } from '../support/replay.js';
import { whatIf } from '../../lib/replay/what-if.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.pickle', import.meta.url));
const H100 = fileURLToPath(new URL('../fixtures/pytorch-h100-streams.pickle', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const PAGE = fileURLToPath(new URL('../../dist/viewer/page-logic.js', import.meta.url));
const CHROMIUM = process.env.CCA_CHROMIUM ?? '/usr/bin/chromium';
const dir = tempDir('cca-viewer-');

beforeEach(() => {
  freshSim({ capacityBytes: 64 * MiB });
  memory._record_memory_history(null);
});

/** A history with tags, two streams' worth of churn, a free-then-reuse and an OOM. */
function recorded(): Snapshot {
  memory._record_memory_history({ enabled: 'all', context: 'all' });
  const keep = [cuda.alloc(3 * MiB, { tag: 'weights' })];
  for (let i = 0; i < 20; i++) {
    const a = cuda.alloc((i + 1) * 100 * KiB, { tag: 'activations' });
    if (i % 5 === 0) keep.push(cuda.alloc(64 * KiB, { tag: 'cache' }));
    a.free();
  }
  try {
    cuda.alloc(200 * MiB);
  } catch (e) {
    if (!(e instanceof CudaOutOfMemoryError)) throw e;
  }
  const snap = memory._snapshot();
  memory._record_memory_history(null);
  for (const b of keep) b.free();
  return snap;
}

/** Two MemPools beside the default pools: one kept to the dump, one released before it. */
function withPools(): { snap: Snapshot; kept: MemPool; reservedInPool: number[] } {
  memory._record_memory_history({ enabled: 'all', context: 'all' });
  const kept = new MemPool();
  const gone = new MemPool();
  const keep = [cuda.alloc(3 * MiB)];
  const reservedInPool: number[] = [];
  for (let i = 0; i < 6; i++) {
    const held = use_mem_pool(kept, () => cuda.alloc((i + 1) * MiB));
    const scratch = use_mem_pool(gone, () => cuda.alloc(512 * KiB));
    cuda.alloc(200 * KiB).free();
    scratch.free();
    if (i % 2) held.free();
    else keep.push(held);
  }
  reservedInPool.push(memory.memory_stats()[`reserved_bytes_by_private_pools.0_${kept.id[1]}.all.current`] as number);
  gone.release();
  const snap = memory._snapshot();
  memory._record_memory_history(null);
  for (const b of keep) b.free();
  kept.release();
  return { snap, kept, reservedInPool };
}

type Viewer = {
  device(raw: unknown, actions: string[]): { n: number };
  columns(dev: unknown, lo: number, hi: number, w: number): { allocated: Float64Array; reserved: Float64Array; at: Int32Array };
  liveAt(dev: unknown, i: number, actions: string[]): Map<number, [number, number]>;
  segmentsAt(dev: unknown, i: number, actions: string[]): { address: number; total: number }[];
  search(dev: unknown, data: unknown, q: string, limit?: number): number[];
  poolAt(p: PoolSeries, i: number): [number, number];
};

function pageLogic(): Viewer {
  const context: Record<string, unknown> = { atob: globalThis.atob };
  context.globalThis = context;
  vm.runInNewContext(readFileSync(PAGE, 'utf8'), context);
  return context.CCAViewer as Viewer;
}


/** A device history and a pinned host history (PyTorch 2.14's record_pinned_host_memory). */
function withHost(): { snap: Snapshot; kept: { free(): void }[] } {
  memory._record_memory_history({ enabled: 'all', context: 'all', record_pinned_host_memory: true });
  const kept: { free(): void }[] = [cuda.alloc(MiB, { tag: 'weights' })];
  for (let i = 0; i < 8; i++) {
    const h = cuda.allocHost((i + 1) * 3000);
    if (i % 3 === 0) kept.push(h);
    else h.free();
  }
  const snap = memory._snapshot();
  memory._record_memory_history(null, { record_pinned_host_memory: true });
  return { snap, kept };
}

describe('viewer data and page logic', () => {
  it('the page rebuilds the live set and segments at every event as the allocator had them', () => {
    const snap = recorded();
    const data = viewerData(snap, 'test');
    const v = pageLogic();
    const dev = v.device(data.devices[0], data.actions);
    const trace = snap.device_traces[0]!;
    expect(dev.n).toBe(trace.length);
    // At the end: exactly the live blocks of the snapshot, with their sizes asked.
    const live = v.liveAt(dev, dev.n - 1, data.actions);
    const blocks = snap.segments.flatMap((s) => s.blocks).filter((b) => b.state === 'active_allocated');
    expect([...live.keys()].sort()).toEqual(blocks.map((b) => b.address).sort());
    for (const b of blocks) expect(live.get(b.address)![0]).toBe(b.requested_size);
    expect(v.segmentsAt(dev, dev.n - 1, data.actions)).toEqual(
      snap.segments.map((s) => ({ address: s.address, total: s.total_size })).sort((a, b) => a.address - b.address));
    // Before any event nothing was live and no segment existed (the history began empty).
    expect(v.liveAt(dev, -1, data.actions).size).toBe(0);
    expect(v.segmentsAt(dev, -1, data.actions)).toEqual([]);
    // After each event the live bytes equal the shared timeline engine's.
    const t = timeline(snap, 0);
    for (let i = 0; i < dev.n; i++) {
      const bytes = [...v.liveAt(dev, i, data.actions).values()].reduce((n, [size]) => n + size, 0);
      expect(bytes).toBe(t.allocated[i]);
      expect(t.allocated[i]).toBeLessThanOrEqual(t.reserved[i]!);
    }
  });

  it('places annotated regions by seq: what ran just before a START or just after an END is outside', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all' });
    const keep = [];
    for (let i = 0; i < 60; i++) {
      keep.push(cuda.alloc(16 * KiB));
      memory.annotate('forward', () => cuda.alloc(KiB).free());
      keep.push(cuda.alloc(2 * KiB));
    }
    const snap = memory._snapshot();
    memory._record_memory_history(null);
    for (const b of keep) b.free();
    const data = viewerData(snap, 'regions');
    const v = pageLogic() as Viewer & { regionsAt(dev: unknown, data: unknown, i: number): string[] };
    const dev = v.device(data.devices[0], data.actions);
    const trace = snap.device_traces[0]!;
    const regions = data.devices[0]!.regions;
    expect(data.regionNames).toEqual(['forward']);
    expect(regions).toHaveLength(60);
    regions.forEach(([, from, to], k) => {
      const allocs = trace.slice(from, to).filter((e) => e.action === 'alloc');
      expect(allocs.map((e) => e.size)).toEqual([KiB]);
      expect(trace[from - 1]!.size).toBe(16 * KiB);  // just before START: outside
      expect(trace[to]!.size).toBe(2 * KiB);  // just after END: outside
      expect(v.regionsAt(dev, data, from)).toEqual([`forward #${k + 1}`]);
      expect(v.regionsAt(dev, data, from - 1)).toEqual([]);
    });
  });

  it('columns keep every peak and search finds addresses, frames and tags', () => {
    const snap = recorded();
    const data = viewerData(snap, 'test');
    const v = pageLogic();
    const dev = v.device(data.devices[0], data.actions);
    const t = timeline(snap, 0);
    const cols = v.columns(dev, 0, dev.n, 7);
    expect(Math.max(...cols.allocated)).toBe(Math.max(...t.allocated));
    for (let c = 0; c < 7; c++) expect(cols.allocated[c]).toBe(t.allocated[cols.at[c]!]);
    const trace = snap.device_traces[0]!;
    const first = trace.find((e) => e.action === 'alloc')!;
    const byAddr = v.search(dev, data, `0x${first.addr!.toString(16)}`);
    expect(byAddr).toContain(trace.indexOf(first));  // with its segment_alloc, which starts there too
    for (const i of byAddr) expect(trace[i]!.addr).toBe(first.addr);
    const tagged = v.search(dev, data, 'CACHE');
    expect(tagged.length).toBeGreaterThanOrEqual(4);
    for (const i of tagged) expect(trace[i]!.user_metadata).toBe('cache');
    expect(v.search(dev, data, 'recorded').length).toBeGreaterThan(0);  // this file's function name
    expect(v.search(dev, data, 'no such frame anywhere')).toEqual([]);
  });

  it('starts PyTorch\'s fixture from its inferred warm state', () => {
    const snap = loadSnapshot(FIXTURE);
    const data = viewerData(snap, 'fixture');
    const v = pageLogic();
    const dev = v.device(data.devices[0], data.actions);
    expect(v.liveAt(dev, -1, data.actions).size).toBe(486);
    const live = v.liveAt(dev, dev.n - 1, data.actions);
    expect(live.size).toBe(486);
    expect(v.segmentsAt(dev, 0, data.actions)).toHaveLength(46);
    const t = timeline(snap, 0);
    for (let i = 0; i < t.allocated.length; i++) expect(t.allocated[i]).toBeLessThanOrEqual(t.reserved[i]!);
  });

  it('the private-pool view: each pool\'s envelope and allocations, summing to the whole', () => {
    const { snap, kept, reservedInPool } = withPools();
    const poolMemoryAt = pageLogic().poolAt;  // the page's reading of a pool's series
    const t = timeline(snap, 0);
    const pt = poolTimeline(snap, 0);
    expect(pt.pools.map((p) => p.id).sort((a, b) => a[1] - b[1])).toEqual([[0, kept.id[1]], [0, kept.id[1] + 1]]);
    const keptPool = pt.pools.find((p) => p.id[1] === kept.id[1])!;
    const gonePool = pt.pools.find((p) => p.id[1] !== kept.id[1])!;
    const last = t.allocated.length - 1;
    // At the dump: the kept pool holds what its final segments hold; the released one nothing.
    const segs = snap.segments.filter((g) => g.segment_pool_id[1] === kept.id[1]);
    const live = segs.flatMap((g) => g.blocks).filter((b) => b.state === 'active_allocated');
    expect(poolMemoryAt(keptPool, last)).toEqual([live.reduce((n, b) => n + b.requested_size, 0), segs.reduce((n, g) => n + g.total_size, 0)]);
    expect(keptPool.peakReserved).toBe(reservedInPool[0]);
    expect(poolMemoryAt(gonePool, last)).toEqual([0, 0]);
    expect(gonePool.peakReserved).toBeGreaterThan(0);
    // Everywhere, the pools' memory is part of the whole and never negative.
    for (let i = -1; i <= last; i++) {
      let a = 0;
      let r = 0;
      for (const p of pt.pools) {
        const [pa, pr] = poolMemoryAt(p, i);
        expect(pa).toBeGreaterThanOrEqual(0);
        expect(pa).toBeLessThanOrEqual(pr);
        a += pa;
        r += pr;
      }
      expect(a).toBeLessThanOrEqual(i < 0 ? t.allocatedAtStart : t.allocated[i]!);
      expect(r).toBeLessThanOrEqual(i < 0 ? t.reservedAtStart : t.reserved[i]!);
    }
    // The page's bands: default pools plus every pool's allocations are the timeline's.
    const data = viewerData(snap, 'pools');
    const v = pageLogic() as Viewer & { poolBands(dev: unknown, cols: unknown, most?: number): { names: string[]; defaultAllocated: Float64Array; envelope: Float64Array[]; allocated: Float64Array[] } };
    const dev = v.device(data.devices[0], data.actions);
    const cols = v.columns(dev, 0, dev.n, 40);
    for (const most of [8, 1]) {
      const bands = v.poolBands(dev, cols, most);
      expect(bands.names).toEqual(most === 8 ? [`pool (0, ${keptPool.id[1]})`, `pool (0, ${gonePool.id[1]})`] : ['2 other pools']);
      for (let c = 0; c < 40; c++) {
        const inPools = bands.allocated.reduce((n, a) => n + a[c]!, 0);
        expect(bands.defaultAllocated[c]! + inPools).toBe(cols.allocated[c]);
        bands.envelope.forEach((env, k) => expect(env[c]).toBeGreaterThanOrEqual(bands.allocated[k]![c]!));
      }
    }
  });

  it('reads pools from the final segments when trace entries carry no pool id, as PyTorch 2.11 writes them', () => {
    const { snap, kept } = withPools();
    const poolMemoryAt = pageLogic().poolAt;
    const ours = poolTimeline(snap, 0);
    for (const e of snap.device_traces[0]!) delete e.pool_id;
    const read = poolTimeline(snap, 0);
    // The kept pool's memory is found whole; the pool released before the dump is not.
    expect(read.pools.map((p) => p.id)).toEqual([[0, kept.id[1]]]);
    const a = ours.pools.find((p) => p.id[1] === kept.id[1])!;
    const b = read.pools[0]!;
    for (let i = -1; i < snap.device_traces[0]!.length; i++) expect(poolMemoryAt(b, i)).toEqual(poolMemoryAt(a, i));
  });

  it('an action this viewer does not know is listed as other and changes no state', () => {
    const snap = recorded();
    const trace = snap.device_traces[0]!;
    const before = pageLogic();
    const data0 = viewerData(snap, 'x');
    const live0 = before.liveAt(before.device(data0.devices[0], data0.actions), trace.length - 1, data0.actions);
    // At an address nothing frees: replayed as an alloc, it would stay live to the end.
    trace.splice(2, 0, { ...trace[1]!, addr: 0x1234000, action: 'checkpoint_restore' as never });
    const data = viewerData(snap, 'x');
    const v = pageLogic();
    const dev = v.device(data.devices[0], data.actions) as unknown as { action: Uint8Array };
    expect(data.actions[dev.action[2]!]).toBe('other');
    const plain = (m: Map<number, [number, number]>) => JSON.stringify([...m].sort((a, b) => a[0] - b[0]));
    expect(plain(v.liveAt(dev, trace.length - 1, data.actions))).toBe(plain(live0));
  });

  it('pinned host memory is one more view, numbered -1, replayed by the same page logic', () => {
    const { snap, kept } = withHost();
    const data = viewerData(snap, 'host');
    expect(data.devices.map((d) => d.device)).toEqual([0, -1]);
    const v = pageLogic();
    const host = v.device(data.devices[1], data.actions);
    expect(host.n).toBe(snap.host_traces!.length);
    const live = v.liveAt(host, host.n - 1, data.actions);
    const blocks = snap.host_segments!.flatMap((g) => g.blocks).filter((b) => b.state === 'active_allocated');
    expect([...live.keys()].sort()).toEqual(blocks.map((b) => b.address).sort());
    expect(v.segmentsAt(host, host.n - 1, data.actions)).toEqual(
      snap.host_segments!.map((g) => ({ address: g.address, total: g.total_size })).sort((a, b) => a.address - b.address));
    for (const k of kept) k.free();
  });

  it('the HTML is self-contained and no string in the data can end its script', () => {
    const snap = recorded();
    snap.segments[0]!.blocks[0]!.user_metadata = '</script><script>alert(1)</script>';
    snap.device_traces[0]![1]!.user_metadata = '</script>';
    const html = viewerHtml(snap, 'a <title>');
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html.match(/<\/script>/g)).toHaveLength(wasmBuilt ? 3 : 2);  // data, what-if input, page
    expect(html).toContain('<title>a &lt;title&gt;</title>');
  });
});

const HAVE_CHROMIUM = existsSync(CHROMIUM);
describe.skipIf(!HAVE_CHROMIUM)(HAVE_CHROMIUM ? `the viewer in Chromium (${CHROMIUM})`
  : `the viewer in Chromium: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium, or set CCA_CHROMIUM to one)`, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function open(file: string) {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('request', (r) => {
      // blob: is the what-if worker's source, made in the page from its own text.
      if (!/^(file|blob):/.test(r.url())) requests.push(r.url());
    });
    await page.goto(`file://${file}`);
    return { page, errors, requests };
  }

  // Pixels of one colour on a canvas, counted in the page.
  const pixels = (id: string, [r, g, b]: [number, number, number]) => `(() => {
    const c = document.getElementById('${id}');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === ${r} && d[i + 1] === ${g} && d[i + 2] === ${b}) n++;
    return n;
  })()`;
  const bluePixels = (id: string) => pixels(id, [0x4c, 0x78, 0xa8]);

  it('draws the timeline, shows the state at a clicked event, searches, offline', async () => {
    const snap = recorded();
    const file = join(dir, 'recorded.html');
    writeFileSync(file, viewerHtml(snap, 'recorded'));
    const { page, errors, requests } = await open(file);
    expect(await page.evaluate(bluePixels('timeline'))).toBeGreaterThan(1000);
    const box = (await page.locator('#timeline').boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.5, box.y + box.height * 0.6);
    const event = await page.locator('#event').textContent();
    expect(event).toMatch(/^#\d+ {2}(alloc|free_requested|free_completed|segment_alloc|oom)/);
    expect(await page.locator('#live .row').count()).toBeGreaterThan(0);
    expect(await page.locator('#segments-title').textContent()).toMatch(/^\d+ segments after event #\d+/);
    expect(await page.evaluate(bluePixels('segments'))).toBeGreaterThan(0);
    await page.keyboard.press('ArrowRight');
    const next = Number(/^#(\d+)/.exec((await page.locator('#event').textContent())!)![1]);
    expect(next).toBe(Number(/^#(\d+)/.exec(event!)![1]) + 1);
    await page.fill('#search', 'cache');
    expect(await page.locator('#results .row').count()).toBeGreaterThanOrEqual(4);
    await page.locator('#results .row').first().click();
    expect(await page.locator('#event').textContent()).toContain('tag cache');
    // The OOM is drawn as a red line.
    const red = await page.evaluate(`(() => {
      const c = document.getElementById('timeline');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 0xd6 && d[i + 1] === 0x27 && d[i + 2] === 0x28) n++;
      return n;
    })()`);
    expect(red).toBeGreaterThan(0);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  });

  it('offers pinned host memory beside the devices and draws it', async () => {
    const { snap, kept } = withHost();
    const file = join(dir, 'host.html');
    writeFileSync(file, viewerHtml(snap, 'host'));
    const { page, errors, requests } = await open(file);
    const options = await page.locator('#device option').allTextContents();
    expect(options).toEqual([expect.stringMatching(/^device 0 \(\d+ events\)$/), `pinned host memory (${snap.host_traces!.length} events)`]);
    await page.selectOption('#device', '1');
    expect(await page.evaluate(bluePixels('timeline'))).toBeGreaterThan(100);
    const box = (await page.locator('#timeline').boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.99, box.y + box.height * 0.6);
    expect(await page.locator('#event').textContent()).toMatch(/^#\d+ {2}(alloc|free_requested|free_completed|segment_alloc)/);
    expect(await page.locator('#live .row').count()).toBe(3);  // the three blocks kept
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
    for (const k of kept) k.free();
  });

  it('a native client\'s live block shows the native frames the C ABI recorded', async () => {
    // The consumer addon (test/interop/consumer.c) allocates in a child process on the
    // simulator; the file it dumps is opened here.
    const file = join(dir, 'native-client.pickle');
    const code = `
      import { createRequire } from 'node:module';
      import { buildConsumer } from ${JSON.stringify(fileURLToPath(new URL('../interop/build-consumer.mjs', import.meta.url)))};
      import { interop, memory } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
      const consumer = createRequire(import.meta.url)(buildConsumer(interop.includeDir, ${JSON.stringify(dir)}));
      consumer.attach(interop.allocatorApi());
      const c = consumer.open('codec', 1).client;
      memory._record_memory_history({ enabled: 'all', context: 'all', stacks: 'all' });
      const freed = consumer.malloc(c, 0, 4096n, 0n).ptr;
      consumer.malloc(c, 0, 1n << 20n, 0n);
      consumer.free(c, 0, freed);
      memory._dump_snapshot(${JSON.stringify(file)});`;
    execFileSync(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, CCA_DEVICE: 'sim' } });
    const html = join(dir, 'native-client.html');
    writeFileSync(html, viewerHtml(loadSnapshot(file), 'native client'));
    const { page, errors, requests } = await open(html);
    const box = (await page.locator('#timeline').boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.99, box.y + box.height * 0.6);  // the last events
    const rows = page.locator('#live .row');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('consumer_malloc');
    await rows.first().click();
    const text = (await page.locator('#event').textContent())!;
    expect(text).toMatch(/^live block 0x[0-9a-f]+, 1\.00 MiB\n\nconsumer_malloc .*consumer\.node/);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  });

  it('opens a file with MemPools on the private-pool view, and switches back', async () => {
    const { snap, kept } = withPools();
    const file = join(dir, 'pools.html');
    writeFileSync(file, viewerHtml(snap, 'pools'));
    const { page, errors, requests } = await open(file);
    const envelopePixels = pixels('timeline', [0xc7, 0xc7, 0xc7]);
    expect(await page.locator('#view').inputValue()).toBe('pools');
    expect(await page.evaluate(envelopePixels)).toBeGreaterThan(100);
    await page.fill('#search', `0x${snap.segments.find((g) => g.segment_pool_id[1] === kept.id[1])!.address.toString(16)}`);
    await page.locator('#results .row').first().click();
    expect(await page.locator('#event').textContent()).toContain(`pool (0, ${kept.id[1]})`);
    await page.selectOption('#view', 'allocated');
    expect(await page.evaluate(envelopePixels)).toBe(0);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  });

  it.skipIf(!wasmBuilt)('what-if in the page: PyTorch\'s H100 history replayed in a Web Worker, with the numbers cca replay --what-if prints', async () => {
    const file = join(dir, 'what-if.html');
    execFileSync(process.execPath, [CLI, 'viz', H100, '-o', file, '--what-if', 'expandable_segments:True'], { encoding: 'utf8' });
    const cli = await whatIf(H100, { settings: ['max_split_size_mb:48'], workers: 1 });
    const rowOf = (settings: string) => cli.rows.find((r) => r.settings === settings)!;
    const { page, errors, requests } = await open(file);
    const result = async (settings: string) => {
      await page.waitForFunction(`(() => {
        const t = document.getElementById('what-if-result').textContent;
        return t !== '' && JSON.parse(t).settings === ${JSON.stringify(settings)};
      })()`, undefined, { timeout: 60_000 });
      return JSON.parse((await page.locator('#what-if-result').textContent())!) as { settings: string; peakReservedBytes: number; ooms: unknown; stoppedAt: unknown; deviceMallocs: number };
    };
    // Opened with the setting replayed: the row the command line prints for it.
    const opened = await result('expandable_segments:True');
    const row = rowOf('expandable_segments:True');
    expect(opened).toMatchObject({ peakReservedBytes: row.peakReserved, ooms: row.ooms, stoppedAt: row.stoppedAt, deviceMallocs: row.deviceMallocs });
    expect(opened.ooms).toEqual({ recorded: 1, here: 1 });
    // Orange: our reserved memory drawn over the recorded (grey).
    expect(await page.evaluate(pixels('what-if-chart', [0xe6, 0x7e, 0x00]))).toBeGreaterThan(50);
    // The controls write the settings string; another replay answers for it.
    await page.locator('#wi-expandable').uncheck();
    await page.fill('#wi-max-split', '48');
    await page.locator('#wi-max-split').dispatchEvent('change');
    expect(await page.locator('#wi-settings').inputValue()).toBe('max_split_size_mb:48');
    await page.click('#wi-run');
    const other = await result('max_split_size_mb:48');
    expect(other).toMatchObject({ peakReservedBytes: rowOf('max_split_size_mb:48').peakReserved, ooms: rowOf('max_split_size_mb:48').ooms });
    // A bad setting is refused by the allocator's parser, in the page.
    await page.fill('#wi-settings', 'bogus:1');
    await page.click('#wi-run');
    await page.waitForFunction("/ERR_CCA_INVALID_CONFIG/.test(document.getElementById('wi-status').textContent)");
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  });

  it('opens PyTorch\'s fixture written by cca viz', async () => {
    const file = join(dir, 'fixture.html');
    execFileSync(process.execPath, [CLI, 'viz', FIXTURE, '-o', file], { encoding: 'utf8' });
    const { page, errors, requests } = await open(file);
    expect(await page.locator('#device').textContent()).toContain('device 0 (6111 events)');
    expect(await page.locator('#view').inputValue()).toBe('allocated');  // no private pool in it
    expect(await page.locator('#live div').first().textContent()).toContain('486 live allocations');
    expect(await page.evaluate(bluePixels('timeline'))).toBeGreaterThan(1000);
    const box = (await page.locator('#timeline').boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.3, box.y + box.height * 0.7);
    expect(await page.locator('#event').textContent()).toMatch(/\.py:\d+/);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  });
});
