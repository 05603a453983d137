/**
 * Entry of the single-file executable (scripts/build-bin.mjs bundles this, not src/cli.ts).
 * In a bundle `import.meta.url` no longer names src/cli.ts, so the CLI's own "am I the entry
 * point?" check cannot be trusted there; this file runs the CLI unconditionally instead.
 */
import { main } from '../src/cli.ts';

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
