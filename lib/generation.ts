// The runtime generation: buffers and streams remember the one they were made in, so a
// handle from before cuda.sim.configure() is refused instead of touching new memory.
// Read lazily, so importing the package does not start the runtime.
import { native } from './native.js';

let current: number | undefined;

export function generation(): number {
  return (current ??= native.runtimeInfo().generation);
}

/** @internal */
export function setGeneration(g: number): void {
  current = g;
}
