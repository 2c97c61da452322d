// An HTTP endpoint for programs with no server of their own: a node:http listener that
// serves a registry with the allocator's metrics. Off unless started; localhost by default.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError } from '../errors.js';
import { checkInteger, checkOptions, checkString } from '../validate.js';
import { loadPromClient, registerPrometheus, type PrometheusRegistry } from './prometheus.js';

export interface ServeOptions {
  /** Default 9464 (OpenTelemetry's Prometheus exporter port); 0 picks a free one. */
  port?: number;
  /** Default 127.0.0.1: reachable from this machine only. '0.0.0.0' opens it to the network. */
  host?: string;
  /** Default '/metrics'. */
  path?: string;
  /** A registry to serve (default: a new one holding only the allocator's metrics). */
  registry?: PrometheusRegistry;
}

export interface MetricsServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function serveMetrics(options?: ServeOptions): Promise<MetricsServer> {
  const o = checkOptions<ServeOptions>('serveMetrics options', options, ['port', 'host', 'path', 'registry']);
  const port = o.port === undefined ? 9464 : checkInteger('options.port', o.port, 0, 65535);
  const host = o.host === undefined ? '127.0.0.1' : checkString('options.host', o.host);
  const path = o.path === undefined ? '/metrics' : checkString('options.path', o.path);
  let registry = o.registry;
  if (!registry) {
    const client = await loadPromClient();
    registry = (await registerPrometheus({ registry: new client.Registry() })).registry;
  }
  const served = registry;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: metrics are at ${path}\n`);
      return;
    }
    served.metrics().then(
      (text) => res.writeHead(200, { 'content-type': served.contentType }).end(text),
      (e: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${e.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      reject(e.code === 'EADDRINUSE'
        ? new InvalidArgumentError(`serveMetrics: ${where} is already in use; pass another port, or port: 0 for a free one`, 'ERR_CCA_PORT_IN_USE')
        : new InvalidArgumentError(`serveMetrics: cannot listen on ${where}: ${e.message}`, 'ERR_CCA_LISTEN_FAILED'));
    });
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${actual}${path}`,
    port: actual,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
