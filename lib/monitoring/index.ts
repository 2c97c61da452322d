// GPU memory on dashboards: Prometheus (prom-client), OpenTelemetry, an optional endpoint.
export { METRICS, POOLS, TAG_SERIES, readSamples, type DeviceSample, type LabelSample, type MetricDefinition, type Pool } from './metrics.js';
export { registerPrometheus, type PrometheusHandle, type PrometheusOptions, type PrometheusRegistry } from './prometheus.js';
export { registerOpenTelemetry, otelName, type OpenTelemetryHandle, type OpenTelemetryMeter } from './opentelemetry.js';
export { serveMetrics, type MetricsServer, type ServeOptions } from './endpoint.js';
