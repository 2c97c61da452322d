// Compute on the simulated GPU: kernels are refused by name, and events, waits between
// streams and completion promises work, ordered by the simulator's held streams.
import { beforeEach, describe, expect, it } from 'vitest';
import { compute, cuda, memory } from '../../lib/index.js';
import { freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

describe('kernels on the simulator', () => {
  it('are refused with a code that names the cuda backend', () => {
    expect(() => compute.Module.load('FAKECUBIN\nsaxpy\n')).toThrow(
      expect.objectContaining({ code: 'ERR_CCA_KERNELS_UNSUPPORTED', message: expect.stringMatching(/simulated.*CCA_DEVICE=cuda/) }));
    expect(() => compute.launchLimits()).toThrow(expect.objectContaining({ code: 'ERR_CCA_KERNELS_UNSUPPORTED' }));
  });
});

describe('events and ordering on the simulator', () => {
  it('an event on a held stream is pending until the stream completes', async () => {
    const s = cuda.Stream.create();
    cuda.sim.holdStream(s);
    const e = new compute.Event().record(s);
    expect(e.query()).toBe(false);
    let resolved = false;
    const done = e.done().then(() => { resolved = true; });
    await new Promise((r) => setTimeout(r, 20));
    expect(resolved).toBe(false);
    cuda.sim.completeStream(s);
    await done;
    expect(e.query()).toBe(true);
    expect(memory.check_invariants()).toBeNull();
  });

  it('a stream that waits for an event holds its later work back, and done() resolves after', async () => {
    const producer = cuda.Stream.create();
    const consumer = cuda.Stream.create();
    cuda.sim.holdStream(producer);
    consumer.waitEvent(new compute.Event().record(producer));
    const after = new compute.Event().record(consumer);
    expect(after.query()).toBe(false);
    const order: string[] = [];
    const consumerDone = consumer.done().then(() => order.push('consumer'));
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual([]);
    expect(consumer.query()).toBe(false);
    cuda.sim.completeStream(producer);
    await consumerDone;
    expect(after.query()).toBe(true);
    expect(order).toEqual(['consumer']);
  });

  it('waitStream orders behind what is queued on the other stream so far', () => {
    const a = cuda.Stream.create();
    const b = cuda.Stream.create();
    cuda.sim.holdStream(a);
    new compute.Event().record(a);
    b.waitStream(a);
    const e = new compute.Event().record(b);
    expect(e.query()).toBe(false);
    cuda.sim.completeStream(a);
    expect(e.query()).toBe(true);
  });

  it('done() on an idle stream resolves at once, without blocking', async () => {
    await cuda.defaultStream().done();
    await cuda.Stream.create().done();
  });

  it('timed events measure; untimed ones, unfinished ones and destroyed ones are refused with codes', async () => {
    const s = cuda.Stream.create();
    // The simulator times an event when its work completes (at once on an idle stream), so
    // the time between the records is a lower bound, measured here with the same kind of
    // clock rather than trusted to a timer (which may fire early against its start).
    const start = new compute.Event({ timing: true }).record(s);
    const t0 = performance.now();
    while (performance.now() - t0 < 5) { /* the work between the two events */ }
    const end = new compute.Event({ timing: true }).record(s);
    expect(start.elapsedTime(end)).toBeGreaterThanOrEqual(4.9);
    expect(() => start.elapsedTime(new compute.Event().record(s))).toThrow(expect.objectContaining({ code: 'ERR_CCA_EVENT_NOT_TIMED' }));
    cuda.sim.holdStream(s);
    const pending = new compute.Event({ timing: true }).record(s);
    expect(() => start.elapsedTime(pending)).toThrow(expect.objectContaining({ code: 'ERR_CCA_EVENT_NOT_READY' }));
    cuda.sim.completeStream(s);
    expect(start.elapsedTime(pending)).toBeGreaterThanOrEqual(0);
    end.destroy();
    expect(() => end.query()).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_EVENT' }));
    expect(() => start.elapsedTime(end)).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_EVENT' }));
  });

  it('an event of a replaced runtime is refused, not sent to the new devices', () => {
    const e = new compute.Event();
    freshSim();
    expect(() => e.record()).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_EVENT', message: expect.stringMatching(/replaced/) }));
  });

  it('a buffer view checks its range', () => {
    const b = cuda.alloc(100);
    const v = b.view(40, 20);
    expect([v.offset, v.size, v.ptr - b.ptr, v.buffer === b]).toEqual([40, 20, 40, true]);
    expect(b.view(60).size).toBe(40);
    expect(() => b.view(40, 61)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    b.free();
    expect(() => b.view(0)).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_POINTER' }));
  });
});
