// GPU memory as Prometheus metrics through prom-client (an optional peer dependency): one
// call registers the families of METRICS on the user's registry (or prom-client's default
// one); at scrape time they read the allocator once, for every device.
import { InvalidArgumentError } from '../errors.js';
import { checkOptions } from '../validate.js';
import { METRICS, POOLS } from './metrics.js';
import { scrapeSamples } from './scrape.js';

/** The parts of a prom-client Registry this uses. */
export interface PrometheusRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
  removeSingleMetric(name: string): void;
  getSingleMetric(name: string): unknown;
}

export interface PrometheusOptions {
  /** A prom-client Registry (default: prom-client's global `register`). */
  registry?: PrometheusRegistry;
}

export interface PrometheusHandle {
  readonly registry: PrometheusRegistry;
  /** The metric names registered. */
  readonly names: readonly string[];
  /** Removes them from the registry. */
  unregister(): void;
}

// What this uses of prom-client, declared here so that our types do not require it.
interface PromMetric {
  reset(): void;
  set?(labels: object, value: number): void;
  inc?(labels: object, value: number): void;
}
interface PromClient {
  register: PrometheusRegistry;
  Registry: new () => PrometheusRegistry;
  Gauge: new (config: object) => PromMetric;
  Counter: new (config: object) => PromMetric;
}

/** @internal prom-client, loaded on first use (an optional peer dependency). */
export async function loadPromClient(): Promise<PromClient> {
  try {
    const mod = (await import('prom-client')) as unknown as PromClient & { default?: PromClient };
    return mod.default ?? mod;
  } catch {
    throw new InvalidArgumentError('monitoring.registerPrometheus needs prom-client: npm install prom-client@15',
      'ERR_CCA_MISSING_PEER');
  }
}

/**
 * Registers the allocator's metrics (see docs/monitoring.md) on a prom-client registry.
 * Each scrape reads the stats of all devices in one native call (and the clients' and
 * labels' figures beside them). Throws ERR_CCA_ALREADY_REGISTERED if
 * the registry already has them.
 */
export async function registerPrometheus(options?: PrometheusOptions): Promise<PrometheusHandle> {
  const o = checkOptions<PrometheusOptions>('registerPrometheus options', options, ['registry']);
  const client = await loadPromClient();
  const registry = o.registry ?? client.register;
  if (typeof (registry as Partial<PrometheusRegistry>).metrics !== 'function') {
    throw new InvalidArgumentError('options.registry must be a prom-client Registry', 'ERR_INVALID_ARG_TYPE');
  }
  const taken = METRICS.filter((m) => registry.getSingleMetric(m.name));
  if (taken.length > 0) {
    throw new InvalidArgumentError(`the registry already has ${taken.map((m) => m.name).join(', ')}: ` +
      'registerPrometheus was called twice on it; unregister() the first handle', 'ERR_CCA_ALREADY_REGISTERED');
  }
  for (const m of METRICS) {
    const labelNames = m.perPool ? ['device', 'pool'] : m.by ? ['device', m.by] : ['device'];
    const collect = function (this: PromMetric) {
      this.reset();
      for (const s of scrapeSamples()) {
        if (m.by) {
          for (const r of m.by === 'client' ? s.clients : s.tags) this.set!({ device: String(s.device), [m.by]: r.name }, m.rowValue!(r));
          continue;
        }
        for (const pool of m.perPool ? POOLS : (['all'] as const)) {
          const v = m.value(s, pool);
          if (v === undefined) continue;
          const labels = m.perPool ? { device: String(s.device), pool } : { device: String(s.device) };
          // A counter's value is the allocator's count: from 0 after reset, inc sets it.
          if (this.set) this.set(labels, v);
          else this.inc!(labels, v);
        }
      }
    };
    const config = { name: m.name, help: m.help, labelNames, registers: [registry], collect };
    if (m.kind === 'counter') new client.Counter(config);
    else new client.Gauge(config);
  }
  return {
    registry,
    names: METRICS.map((m) => m.name),
    unregister() {
      for (const m of METRICS) registry.removeSingleMetric(m.name);
    },
  };
}
