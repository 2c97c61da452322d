// A script run in a child process over the built package (the backend is chosen once per
// process, so each case that needs another gets its own): `prelude` first, then the script
// as an async function body, whose result comes back parsed from the last line printed.
import { execFileSync } from 'node:child_process';

export const ENTRY = new URL('../../dist/index.js', import.meta.url).href;

export function runScript(prelude: string, script: string, env: NodeJS.ProcessEnv): any {
  const code = `import * as cca from ${JSON.stringify(ENTRY)};\n${prelude}\n` +
    `const out = await (async () => {${script}})();\nconsole.log(JSON.stringify(out));`;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}
