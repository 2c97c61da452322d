// One fuzz worker process: takes cases (file bytes) over IPC and runs each through the
// snapshot reader and then through what every cca command runs on it: summary, segments,
// trace, frag, diff, leaks, replay, viz, and convert both ways (whose output must read
// back). Answers with the outcome; a case that kills this process or outlives its time
// limit is caught by the parent. Runs on the built package (dist/).
import { loadSnapshot, parseSnapshot } from '../../dist/snapshot/load.js';
import { encodeSnapshot, writeSnapshotFile } from '../../dist/snapshot/dump.js';
import { summarize } from '../../dist/analysis/summary.js';
import { fragmentation } from '../../dist/analysis/fragmentation.js';
import { diffSnapshots } from '../../dist/analysis/diff.js';
import { findLeaks } from '../../dist/analysis/leaks.js';
import { replayOnSim } from '../../dist/replay/replay.js';
import { renderSegments, renderSnapshotSummary, renderTrace } from '../../dist/cli/format-snapshot.js';
import { renderDiff, renderFragmentation, renderLeaks, renderReplay } from '../../dist/cli/format-analysis.js';
import { viewerHtml } from '../../dist/viewer/html.js';
import { cuda } from '../../dist/index.js';

const CODED = /^ERR_[A-Z_]+$/;

/** Runs fn; a coded error is a clean refusal, anything else is a crash. */
function attempt(stage, fn, out) {
  try {
    return fn();
  } catch (e) {
    const code = e && typeof e === 'object' ? e.code : undefined;
    if (typeof code === 'string' && CODED.test(code)) {
      out.codes.push(`${stage}:${code}`);
      return undefined;
    }
    out.crash = { stage, error: `${e?.name ?? typeof e}: ${e?.message ?? String(e)}`, stack: e?.stack };
    throw out;
  }
}

function runCase(bytes) {
  const out = { codes: [], parsed: false, crash: null };
  try {
    const snap = attempt('read', () => parseSnapshot(bytes, 'case'), out);
    if (snap === undefined) return out;
    out.parsed = true;
    const base = { segments: [], device_traces: [] };
    attempt('summary', () => renderSnapshotSummary('case', summarize(snap), snap), out);
    attempt('segments', () => renderSegments(snap), out);
    attempt('trace', () => renderTrace(snap, { device: 0, limit: 100, skip: 0 }), out);
    attempt('frag', () => renderFragmentation(fragmentation(snap), 10), out);
    attempt('diff', () => renderDiff('a', 'b', diffSnapshots(base, snap), 20) + renderDiff('b', 'b', diffSnapshots(snap, snap), 20), out);
    attempt('leaks', () => renderLeaks(findLeaks(snap), 10, 2), out);
    attempt('replay', () => {
      cuda.sim.configure();  // each replay starts from an empty runtime, as `cca replay` does
      return renderReplay('case', replayOnSim(snap, { capacityBytes: 64 * 2 ** 30 }), 'native');
    }, out);
    attempt('viz', () => viewerHtml(snap, 'case'), out);
    for (const format of ['pickle', 'json']) {
      const written = attempt(`convert-${format}`, () => encodeSnapshot(snap, format), out);
      // What we accepted we must be able to write, and read back.
      if (written === undefined) continue;
      try {
        parseSnapshot(written, 'converted');
      } catch (e) {
        out.crash = { stage: `reread-${format}`, error: `${e?.code ?? ''} ${e?.message}` };
        return out;
      }
    }
  } catch (e) {
    if (e !== out) out.crash = { stage: 'harness', error: String(e) };
  }
  return out;
}

/** A special file by path: reading it and dumping onto it must both be refused with a code. */
function runPathCase(path) {
  const out = { codes: [], parsed: false, crash: null };
  try {
    const snap = attempt('read', () => loadSnapshot(path), out);
    if (snap !== undefined) out.parsed = true;
    const tiny = { segments: [], device_traces: [[]] };
    if (attempt('dump-onto', () => writeSnapshotFile(tiny, path), out) !== undefined) {
      out.crash = { stage: 'dump-onto', error: `wrote a snapshot onto ${path}` };
    }
  } catch (e) {
    if (e !== out) out.crash = { stage: 'harness', error: String(e) };
  }
  return out;
}

process.on('message', (msg) => {
  const r = msg.path ? runPathCase(msg.path) : runCase(Buffer.from(msg.bytes));
  process.send({ id: msg.id, ...r });
});
process.send({ ready: true });
