// One reading per scrape: prom-client's registry.metrics() calls every family's collect()
// in one synchronous pass; the first reads the allocator, the rest reuse that reading, and
// it is dropped at the next microtask, so a following scrape (even in the same tick) reads
// afresh.
import { readSamples, type DeviceSample } from './metrics.js';

let current: DeviceSample[] | undefined;

export function scrapeSamples(): DeviceSample[] {
  if (!current) {
    current = readSamples();
    queueMicrotask(() => {
      current = undefined;
    });
  }
  return current;
}
