/**
 * `llmux doctor [--config FILE] [--home DIR] [--json] [--timeout-ms N]`: the checks of
 * `src/doctor/` for the config `llmux serve` would run with (the same flags and variables), as a
 * table with a hint under each problem, or as JSON. Exit 0 when nothing needed fails, else 1.
 */
import { loadConfig } from '../config/load.ts';
import { diagnose } from '../doctor/doctor.ts';
import type { CheckResult, DoctorReport, Verdict } from '../doctor/report.ts';
import type { ParsedArgs } from './args.ts';
import type { CliIo } from './io.ts';

const SHOWN: Record<Verdict, string> = { ok: 'ok', warn: 'warn', fail: 'FAIL', off: 'off' };

/** The report as a text table: check, verdict, what was found; the hint on the next line. */
export function doctorTable(report: DoctorReport): string {
  const width = Math.max(5, ...report.checks.map((c) => c.name.length));
  const line = (name: string, verdict: string, detail: string): string => `${name.padEnd(width)}  ${verdict.padEnd(7)}  ${detail}`.trimEnd();
  const rows = report.checks.map((c: CheckResult) => line(c.name, SHOWN[c.verdict], c.detail)
    + (c.hint === undefined ? '' : `\n${' '.repeat(width + 11)}-> ${c.hint}`));
  const failed = report.checks.filter((c) => c.verdict === 'fail').length;
  const warned = report.checks.filter((c) => c.verdict === 'warn').length;
  const verdict = failed > 0
    ? `${failed} check(s) failed${warned > 0 ? `, ${warned} warning(s)` : ''}: fix the FAIL rows`
    : `everything needed passes${warned > 0 ? ` (${warned} warning(s))` : ''}`;
  return `${line('check', 'verdict', 'found')}\n${rows.join('\n')}\n\n${verdict}\n`;
}

export async function runDoctor(args: ParsedArgs, io: CliIo): Promise<number> {
  const report = await diagnose({
    load: () => loadConfig({ env: io.env, configPath: args.text('config'), home: args.text('home') }),
    timeoutMs: args.number('timeout-ms'),
    now: io.now,
  });
  io.stdout(args.flag('json') ? `${JSON.stringify(report, null, 2)}\n` : doctorTable(report));
  return report.ok ? 0 : 1;
}
