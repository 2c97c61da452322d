// Where a replay's reserved memory first parts from the recording's, and why. Both sides are
// compared as growth since their own start (the start itself is rebuilt, and may differ by
// what the rebuild could not place), after each alloc and free that ends a request.
import { divergenceReason } from './reading.js';
import type { ReplayReport } from './report.js';

export class Divergence {
  first: ReplayReport['firstDivergence'] = null;
  /** The last entry where both sides had grown alike, and each side's reserved bytes then. */
  #agreedAt = -1;
  #agreedRecorded: number;
  #agreedOurs: number;
  readonly #recordedStart: number;
  readonly #ourStart: number;
  /** Readings of the history that may have placed a block differently before. */
  readonly #caveats: string[];

  constructor(recordedStart: number, ourStart: number, caveats: string[]) {
    this.#recordedStart = this.#agreedRecorded = recordedStart;
    this.#ourStart = this.#agreedOurs = ourStart;
    this.#caveats = caveats;
  }

  /** After entry `i`: each side's reserved bytes; `releases`: how each release was replayed. */
  check(i: number, action: string, recorded: number, ours: number, releases: ReadonlyMap<number, string>): void {
    if (this.first !== null) return;
    if (recorded - this.#recordedStart === ours - this.#ourStart) {
      this.#agreedAt = i;
      this.#agreedRecorded = recorded;
      this.#agreedOurs = ours;
      return;
    }
    this.first = {
      index: i, action, recordedGrowth: recorded - this.#recordedStart, ourGrowth: ours - this.#ourStart,
      reason: divergenceReason({
        action, since: this.#agreedAt, at: i, releases, caveats: this.#caveats,
        recordedStep: recorded - this.#agreedRecorded, ourStep: ours - this.#agreedOurs,
      }),
    };
  }
}
