/**
 * Every command of the table, through `main` as the bin runs it: `--help` and `-h` answer with
 * the usage, every option and an example (exit 0, nothing on stderr); a usage error is one line
 * naming the flag or argument, then the pointer to `--help` (exit 2, nothing on stdout).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/commands/io.ts';
import { commandTable } from '../../src/commands/table.ts';
import type { CommandSpec } from '../../src/commands/args.ts';
import { SETUP_OLLAMA_URL } from '../../src/commands/setup.ts';
import { DEFAULT_URL } from '../../src/commands/device.ts';
import { DEFAULT_DOCTOR_TIMEOUT_MS } from '../../src/doctor/doctor.ts';

const COMMANDS = commandTable(async () => {
  throw new Error('serve is not started by these tests');
});

function io(env: Record<string, string | undefined> = {}): CliIo & { out: string; err: string } {
  const state = { out: '', err: '', env, stdout(t: string) { state.out += t; }, stderr(t: string) { state.err += t; } };
  return state;
}

const home = (): string => mkdtempSync(join(tmpdir(), 'llmux-table-'));
const named = (spec: CommandSpec): string => spec.path.join(' ');

/** Arguments that satisfy a command's required arguments and options, so only the flag under test is wrong. */
function minimal(spec: CommandSpec): string[] {
  const args = (spec.args ?? []).map(() => 'ABCD-EFGH');
  for (const option of spec.options) if (option.required === true) args.push(`--${option.name}`, home());
  return args;
}

/** The two lines of a usage error: the problem naming `what`, then where the help is. */
function assertUsageError(result: { out: string; err: string }, code: number, path: string, what: RegExp | string): void {
  assert.equal(code, 2, result.err);
  assert.equal(result.out, '');
  const lines = result.err.split('\n');
  assert.equal(lines.length, 3, `two lines and the final newline: ${JSON.stringify(result.err)}`);
  assert.equal(lines[2], '');
  assert.ok(lines[0]?.startsWith(`llmux: ${path}: `), lines[0]);
  if (typeof what === 'string') assert.ok(lines[0]?.includes(what), `${lines[0]} names ${what}`);
  else assert.match(lines[0] as string, what);
  assert.equal(lines[1], `Run "llmux ${path} --help" for usage.`);
}

describe('the command table', () => {
  it('names every command of the CLI, each with a summary, a usage line and an example', () => {
    assert.deepEqual(COMMANDS.map(named), [
      'serve', 'keys create', 'keys list', 'keys revoke', 'models', 'usage', 'setup', 'device approve', 'device deny', 'state migrate', 'doctor',
    ]);
    for (const spec of COMMANDS) {
      assert.ok(spec.summary.length > 10 && !spec.summary.includes('\n'), `${named(spec)}: a one-line summary`);
      assert.ok(spec.usage.startsWith(`llmux ${named(spec)}`), `${named(spec)}: usage starts with the command`);
      assert.ok(spec.example.includes(`llmux ${named(spec)}`), `${named(spec)}: the example runs it`);
      for (const option of spec.options) assert.ok(spec.usage.includes(`--${option.name}`), `${named(spec)}: usage shows --${option.name}`);
      for (const arg of spec.args ?? []) assert.ok(spec.usage.includes(arg.name), `${named(spec)}: usage shows ${arg.name}`);
    }
  });

  it('shows the defaults the commands use, where they are written apart from the table', () => {
    const option = (path: string, name: string) => COMMANDS.find((c) => named(c) === path)?.options.find((o) => o.name === name);
    assert.equal(option('setup', 'ollama-url')?.defaultNote, SETUP_OLLAMA_URL);
    for (const path of ['device approve', 'device deny']) assert.match(option(path, 'url')?.defaultNote ?? '', new RegExp(`else ${DEFAULT_URL}$`));
    assert.equal(option('doctor', 'timeout-ms')?.default, String(DEFAULT_DOCTOR_TIMEOUT_MS));
  });

  for (const spec of COMMANDS) {
    for (const flag of ['--help', '-h']) {
      it(`llmux ${named(spec)} ${flag} shows its usage, every option and an example, exit 0`, async () => {
        const t = io({ LLMUX_HOME: home() });
        assert.equal(await main([...spec.path, flag], t), 0);
        assert.equal(t.err, '');
        assert.ok(t.out.startsWith(`usage: llmux ${named(spec)}`), t.out);
        for (const option of spec.options) assert.ok(t.out.includes(`--${option.name}`), `help names --${option.name}`);
        assert.match(t.out, /-h, --help +show this help/);
        assert.ok(t.out.includes(`Example:\n  ${spec.example.split('\n')[0] as string}`), 'help ends with an example');
      });
    }

    it(`llmux ${named(spec)} refuses an unknown flag with one line naming it, exit 2`, async () => {
      const t = io({ LLMUX_HOME: home() });
      assertUsageError(t, await main([...spec.path, ...minimal(spec), '--frobnicate'], t), named(spec), 'unknown option --frobnicate');
    });

    const valued = spec.options.find((o) => o.kind !== 'flag' && o.family === undefined);
    if (valued !== undefined) {
      it(`llmux ${named(spec)} refuses --${valued.name} without its value, exit 2`, async () => {
        const t = io({ LLMUX_HOME: home() });
        assertUsageError(t, await main([...spec.path, ...minimal(spec).filter((a) => a !== `--${valued.name}`), `--${valued.name}`], t), named(spec), `--${valued.name} needs a value`);
      });
    }

    const flag = spec.options.find((o) => o.kind === 'flag');
    if (flag !== undefined) {
      it(`llmux ${named(spec)} refuses a value given to the flag --${flag.name}, exit 2`, async () => {
        const t = io({ LLMUX_HOME: home() });
        assertUsageError(t, await main([...spec.path, ...minimal(spec), `--${flag.name}=yes`], t), named(spec), `--${flag.name} takes no value`);
      });
    }

    if ((spec.args ?? []).length > 0) {
      it(`llmux ${named(spec)} names its missing argument, exit 2`, async () => {
        const t = io({ LLMUX_HOME: home() });
        assertUsageError(t, await main([...spec.path], t), named(spec), `missing ${spec.args?.[0]?.name as string}`);
      });
    }

    it(`llmux ${named(spec)} refuses an argument too many, exit 2`, async () => {
      const t = io({ LLMUX_HOME: home() });
      assertUsageError(t, await main([...spec.path, ...minimal(spec), 'extra'], t), named(spec), 'unexpected argument "extra"');
    });
  }

  for (const [args, what] of [
    [['keys', 'create', '--rpm', '-5'], '--rpm: "-5" must be a whole number >= 1'],
    [['keys', 'create', '--tpm', '1.5'], '--tpm: "1.5" must be a whole number >= 1'],
    [['keys', 'create', '--tier', 'gold'], '--tier: "gold" must be basic, pro or enterprise'],
    [['keys', 'create', '--budget-usd', '-1'], '--budget-usd: "-1" must be an amount of US dollars >= 0'],
    [['keys', 'create', '--models', ','], '--models: "," must name at least one'],
    [['keys', 'create', '--name', '--admin'], '--name needs a value'],
    [['serve', '--port', 'abc'], '--port: "abc" is not a port number (0-65535)'],
    [['serve', '--port', '70000'], '--port: "70000" is not a port number'],
    [['serve', '--port=-1'], '--port: "-1" is not a port number'],
    [['doctor', '--timeout-ms', '0'], '--timeout-ms: "0" must be a whole number >= 1'],
    [['usage', '--by', 'week'], '--by: "week" must be one of day, hour, model, key'],
    [['setup', '--openai-key-env', 'NOT A NAME'], '--openai-key-env: "NOT A NAME" is not an environment variable name'],
    [['setup', '--skynet-key-env', 'X'], 'unknown option --skynet-key-env'],
    [['state', 'migrate'], '--from-home DIR is required'],
  ] as const) {
    it(`llmux ${args.join(' ')}: "${what}", exit 2`, async () => {
      const t = io({ LLMUX_HOME: home() });
      const path = args[0] === 'keys' || args[0] === 'state' ? `${args[0]} ${args[1]}` : args[0];
      assertUsageError(t, await main([...args], t), path, what);
    });
  }

  it('llmux --help lists every command, and llmux help COMMAND is COMMAND --help', async () => {
    const t = io();
    assert.equal(await main(['--help'], t), 0);
    for (const spec of COMMANDS) assert.ok(t.out.includes(`llmux ${named(spec)}`), named(spec));
    assert.match(t.out, /Exit codes: 0 done, 1 failed, 2 usage error/);
    const viaHelp = io();
    const viaFlag = io();
    assert.equal(await main(['help', 'keys', 'create'], viaHelp), 0);
    assert.equal(await main(['keys', 'create', '--help'], viaFlag), 0);
    assert.equal(viaHelp.out, viaFlag.out);
  });

  it('a group answers --help with its subcommands, and a missing or unknown one with a usage error', async () => {
    for (const group of ['keys', 'device', 'state']) {
      const t = io();
      assert.equal(await main([group, '--help'], t), 0);
      for (const spec of COMMANDS.filter((c) => c.path[0] === group)) assert.ok(t.out.includes(`llmux ${named(spec)}`), named(spec));
      const missing = io();
      assertUsageError(missing, await main([group], missing), group, 'expected ');
      const unknown = io();
      assertUsageError(unknown, await main([group, 'frobnicate'], unknown), group, 'not "frobnicate"');
    }
  });

  it('help wins over a bad flag beside it, and `--` ends the options', async () => {
    const t = io();
    assert.equal(await main(['keys', 'create', '--rpm', '-5', '--help'], t), 0);
    assert.match(t.out, /^usage: llmux keys create/);
    const revoked = io({ LLMUX_HOME: home() });
    assert.equal(await main(['keys', 'revoke', '--', '--help'], revoked), 1, 'a key named --help is looked up, not help');
    assert.match(revoked.err, /no key with id or name "--help"/);
  });
});
