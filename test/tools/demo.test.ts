import { describe, expect, it } from 'vitest';
import { runDemo } from '../../lib/demo.js';
import { memory } from '../../lib/index.js';

describe('demo', () => {
  it('runs, says it is simulated, and leaves nothing allocated or reserved', () => {
    const lines: string[] = [];
    runDemo({ iterations: 3, print: (l) => lines.push(l) });
    const text = lines.join('\n');
    expect(text).toContain('SIMULATED');
    expect(text).toMatch(/^ {3}3 {2}\d/m);
    expect(text).toContain('memory summary, device ID 0');
    expect(text).toContain('Why reserved > allocated');
    expect(memory.memory_allocated()).toBe(0);
    expect(memory.memory_reserved()).toBe(0);
    expect(memory.check_invariants()).toBeNull();
  });
});
