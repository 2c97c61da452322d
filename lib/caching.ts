// Caching on and off (PyTorch's caching_allocator_enable), and the scoped form. The
// allocators hold the switch; this module keeps what decides it: the setting, and how many
// caching_allocator_disabled scopes are open.
import { generation } from './generation.js';
import { native } from './native.js';
import { runScoped } from './scoped.js';
import { checkBoolean, typeError } from './validate.js';

let cachingOn = true;
let disabledScopes = 0;

function applyCaching(): void {
  native.setCachingEnabled(cachingOn && disabledScopes === 0);
}

/**
 * Turns the caching allocator on or off on every device (PyTorch's
 * caching_allocator_enable). Off, for sanitizer runs: the cache is emptied, each allocation
 * gets a device allocation of its own and each free returns it to the device at once, so
 * compute-sanitizer's memcheck sees a use after free. Stats, history and snapshots keep
 * working; allocation costs a device call each time. Memory allocated before caching went
 * off returns once its whole segment is free.
 */
export function caching_allocator_enable(value = true): void {
  cachingOn = checkBoolean('value', value);
  applyCaching();
}

/**
 * Runs `fn` with caching off (see caching_allocator_enable) and returns its result; an
 * async fn keeps it off until its promise settles. Caching comes back on when the last
 * open scope ends, unless caching_allocator_enable(false) turned it off.
 */
export function caching_allocator_disabled<T>(fn: () => T): T {
  if (typeof fn !== 'function') throw typeError('a function', 'fn', fn);
  disabledScopes++;
  applyCaching();
  const opened = generation();
  return runScoped(fn, () => {
    // The runtime was replaced meanwhile (cuda.sim.configure): its count started again at 0.
    if (generation() !== opened) return;
    disabledScopes--;
    applyCaching();
  });
}

/** @internal The runtime was replaced (cuda.sim.configure/isolate): its allocators cache. */
export function forgetCachingSettings(): void {
  cachingOn = true;
  disabledScopes = 0;
}
