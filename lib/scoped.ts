/**
 * Runs `fn`, then `done` exactly once: when fn throws, when it returns, or, when it returns
 * a promise, once that promise settles. Returns fn's result (the promise, chained).
 */
export function runScoped<T>(fn: () => T, done: () => void): T {
  let result: T;
  try {
    result = fn();
  } catch (e) {
    done();
    throw e;
  }
  if (result instanceof Promise) return result.finally(done) as T;
  done();
  return result;
}
