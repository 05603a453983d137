/**
 * Tests that need a program the machine may lack (Chromium, redis-server, wrk): outside CI they are
 * skipped when it is missing; in CI (env `CI` set, `.ci/run` installs them) they always run, so a
 * missing program fails them instead of passing unseen.
 */

/** False (run) when `installed` or in CI; else the reason the tests are skipped (`why`, then "skipped outside CI"). */
export function skipUnlessInstalled(installed: boolean, why: string): string | false {
  if (installed) return false;
  if (process.env['CI'] !== undefined && process.env['CI'] !== '') return false;
  return `${why} skipped outside CI`;
}
