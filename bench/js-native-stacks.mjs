// What native stacks cost a C ABI caller: a C consumer addon (test/interop/consumer.c, built
// here with cc against cca.h) calls malloc then free (4 KiB) through the C ABI from a JS
// loop, with history off, on with stacks 'js' (the naming frame) and on with stacks 'all' (a
// backtrace at malloc and at free, context 'all'); median of 7 interleaved rounds of 100,000
// pairs. Runs on any backend (the simulator by default: CCA_DEVICE=sim).
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildConsumer } from '../test/interop/build-consumer.mjs';
import { cuda, interop, memory } from '../dist/index.js';
import { machine } from './common.mjs';

const consumer = createRequire(import.meta.url)(buildConsumer(interop.includeDir, mkdtempSync(join(tmpdir(), 'cca-stacks-'))));
consumer.attach(interop.allocatorApi());
const client = consumer.open('bench', cuda.isSimulated() ? 1 : 0).client;
const N = 100_000;
const pairNs = () => {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) consumer.free(client, 0, consumer.malloc(client, 0, 4096n, 0n).ptr);
  return Number(process.hrtime.bigint() - t0) / N;
};
const history = (stacks) => ({ enabled: 'all', context: 'all', stacks, max_entries: 1000 });
const modes = [['history off', null], ["stacks 'js'", history('js')], ["stacks 'all'", history('all')]];
const times = new Map(modes.map(([name]) => [name, []]));
for (let round = 0; round < 7; round++) {
  for (const [name, options] of modes) {
    memory._record_memory_history(options);
    pairNs();  // warm: the first backtrace loads the unwinder, the first pairs fill the cache
    times.get(name).push(pairNs());
  }
}
memory._record_memory_history(null);
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(`C ABI malloc+free pair from JS through a C consumer (${machine()}), ns, median of 7:`);
const off = median(times.get('history off'));
for (const [name] of modes) console.log(`  ${name.padEnd(12)} ${median(times.get(name)).toFixed(0).padStart(6)}  (${(median(times.get(name)) / off).toFixed(2)}x)`);
