// Bundles the viewer's what-if worker (lib/viewer/what-if-worker.ts and the replay it runs)
// into one browser script, dist/viewer/what-if-worker.bundle.js, which `cca viz` inlines after the
// wasm engine. esbuild resolves the TypeScript sources; the addon's two doors are swapped for
// the browser's (lib/replay/browser/): no addon there, and the wasm engine from the page.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const swaps = {
  'native.js': `${root}lib/replay/browser/no-native.ts`,
  'native-engine.js': `${root}lib/replay/browser/no-native.ts`,
  'wasm-engine.js': `${root}lib/replay/browser/worker-engine.ts`,
};

const result = await build({
  entryPoints: [`${root}lib/viewer/what-if-worker.ts`],
  outfile: `${root}dist/viewer/what-if-worker.bundle.js`,
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: process.argv.includes('--inputs'),
  plugins: [{
    name: 'browser-doors',
    setup(b) {
      b.onResolve({ filter: /(^|\/)(native|native-engine|wasm-engine)\.js$/ }, (args) => {
        const name = args.path.split('/').pop();
        return args.importer.includes('/lib/replay/browser/') ? undefined : { path: swaps[name] };
      });
      // A .js import names the .ts source beside it (the sources use NodeNext's .js paths).
      b.onResolve({ filter: /^\.\.?\/.*\.js$/ }, (args) => ({
        path: fileURLToPath(new URL(args.path.replace(/\.js$/, '.ts'), `file://${args.resolveDir}/`)),
      }));
    },
  }],
});
if (result.metafile) for (const [f, i] of Object.entries(result.metafile.inputs)) console.log(i.bytes, f);
