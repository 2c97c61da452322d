// GPU memory as OpenTelemetry instruments on a meter the user provides (from
// @opentelemetry/api's metrics.getMeter(), with any SDK and exporter): observable gauges
// and counters fed by one batch callback, so a collection reads the allocator once.
import { typeError } from '../validate.js';
import { METRICS, POOLS, type MetricDefinition } from './metrics.js';
import { readSamples } from './metrics.js';

/** The parts of an @opentelemetry/api Meter this uses (any SDK's meter has them). */
export interface OpenTelemetryMeter {
  createObservableGauge(name: string, options?: { description?: string; unit?: string }): object;
  createObservableCounter(name: string, options?: { description?: string; unit?: string }): object;
  addBatchObservableCallback(callback: (result: { observe(o: object, v: number, a?: Record<string, string>): void }) => void, observables: object[]): void;
  removeBatchObservableCallback(callback: (result: { observe(o: object, v: number, a?: Record<string, string>): void }) => void, observables: object[]): void;
}

export interface OpenTelemetryHandle {
  /** Instrument names, as OpenTelemetry spells them (cca.allocated, unit By). */
  readonly names: readonly string[];
  unregister(): void;
}

/** OpenTelemetry's name and unit for a metric: cca_allocated_peak_bytes -> cca.allocated.peak, By. */
export function otelName(m: MetricDefinition): { name: string; unit: string } {
  const base = m.name.replace(/^cca_/, '').replace(/_(bytes|ratio|total|entries)$/, '').replace(/_peak$/, '.peak');
  const unit = m.unit === 'bytes' ? 'By' : m.unit === 'ratio' ? '1' : '{count}';
  return { name: `cca.${base.replace(/_(?!peak)/g, '_')}`, unit };
}

export function registerOpenTelemetry(meter: OpenTelemetryMeter): OpenTelemetryHandle {
  if (meter === null || typeof meter !== 'object' || typeof meter.addBatchObservableCallback !== 'function') {
    throw typeError('an OpenTelemetry Meter (metrics.getMeter(name))', 'meter', meter);
  }
  const instruments = METRICS.map((m) => {
    const { name, unit } = otelName(m);
    const options = { description: m.help, unit };
    return { m, name, instrument: m.kind === 'counter' ? meter.createObservableCounter(name, options) : meter.createObservableGauge(name, options) };
  });
  const callback = (result: { observe(o: object, v: number, a?: Record<string, string>): void }) => {
    const samples = readSamples();
    for (const { m, instrument } of instruments) {
      for (const s of samples) {
        if (m.by) {
          for (const r of m.by === 'client' ? s.clients : s.tags) result.observe(instrument, m.rowValue!(r), { device: String(s.device), [m.by]: r.name });
          continue;
        }
        for (const pool of m.perPool ? POOLS : (['all'] as const)) {
          const v = m.value(s, pool);
          if (v === undefined) continue;
          result.observe(instrument, v, m.perPool ? { device: String(s.device), pool } : { device: String(s.device) });
        }
      }
    }
  };
  const observables = instruments.map((i) => i.instrument);
  meter.addBatchObservableCallback(callback, observables);
  return {
    names: instruments.map((i) => i.name),
    unregister: () => meter.removeBatchObservableCallback(callback, observables),
  };
}
