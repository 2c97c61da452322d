// The conformance scripts' runner: each case in turn, "ok" or "FAIL" with the stack, then
// the allocator's invariants and "N passed, M failed" (what the tests and the GPU runner
// read), and a failing exit code when any failed. Plain node:assert: it runs where no test
// runner is installed (the GPU machine).
import assert from 'node:assert/strict';

export async function runCases(cases, memory) {
  let passed = 0;
  let failed = 0;
  for (const [name, fn] of cases) {
    try {
      await fn();
      passed++;
      console.log(`ok   ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e?.stack ?? e}`);
    }
  }
  assert.equal(memory.check_invariants(), null);
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}
