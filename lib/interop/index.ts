// Other native code in this process allocating through the allocator: the C ABI's table
// for a consumer addon, the header it compiles against, and what each client holds.
// docs/interop.md has the contract and the examples.
import { fileURLToPath } from 'node:url';
import { native } from '../native.js';
import { resolveDevice } from '../device.js';

/**
 * The address of the allocator's C function table (`cca_api_v1` in `include/cca.h`), to
 * hand to a consumer addon, which reads it with `cca_api_from_address`. The table is
 * static: the address stays valid for the life of the process.
 */
export function allocatorApi(): bigint {
  return native.allocatorApi();
}

/** The folder holding `cca.h`, for a consumer's build file (as node-addon-api's include_dir). */
export const includeDir: string = fileURLToPath(new URL('../../include', import.meta.url));

/** What the clients of one name hold on one device (figures since the process began). */
export interface ClientUsage {
  /** The name the clients opened with (`client_open`): their allocations' tag. */
  name: string;
  device: number;
  /** Clients open under this name now. */
  open: number;
  /** Bytes asked for in live allocations, and the most at any time. */
  allocatedBytes: { current: number; peak: number };
  /** Live allocations, and the most at any time. */
  allocations: { current: number; peak: number };
  numAllocs: number;
  numFrees: number;
}

/**
 * Each native client name's usage, per device it allocated on (all devices, or the one
 * given). Empty until some native code opens a client.
 */
export function clients(device?: number): ClientUsage[] {
  const only = device === undefined ? undefined : resolveDevice(device);
  const out: ClientUsage[] = [];
  for (const c of native.clients()) {
    if (only !== undefined && c.device !== only) continue;
    out.push({
      name: c.name,
      device: c.device,
      open: c.open,
      allocatedBytes: { current: c.bytes, peak: c.bytesPeak },
      allocations: { current: c.allocations, peak: c.allocationsPeak },
      numAllocs: c.numAllocs,
      numFrees: c.numFrees,
    });
  }
  return out;
}
