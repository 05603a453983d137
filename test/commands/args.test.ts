import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError, asksForHelp, commandHelp, indentUsage, orList, parseCommandArgs } from '../../src/commands/args.ts';
import type { CommandSpec } from '../../src/commands/args.ts';

const SPEC: CommandSpec = {
  path: ['try'],
  summary: 'A command for these tests.',
  usage: 'llmux try NAME [--count N] [--mode a|b] [--tag T]… [--each-key-env VAR] [--dry] [-y]',
  args: [{ name: 'NAME', description: 'a name' }],
  options: [
    { name: 'count', kind: 'whole', value: 'N', description: 'how many', default: '3' },
    { name: 'mode', kind: 'choice', choices: ['a', 'b'], description: 'the mode' },
    { name: 'tag', kind: 'text', value: 'T', multiple: true, description: 'a tag' },
    { name: 'NAME-key-env', kind: 'text', value: 'VAR', family: ['one-key-env', 'two-key-env'], description: 'where a key is' },
    { name: 'dry', kind: 'flag', description: 'change nothing' },
    { name: 'yes', short: 'y', kind: 'flag', description: 'ask nothing' },
  ],
  example: 'llmux try x --count 2',
  run: async () => 0,
};

const refused = (args: string[]): string => {
  try {
    parseCommandArgs(SPEC, args);
  } catch (error) {
    assert.ok(error instanceof UsageError);
    return error.message;
  }
  assert.fail(`${args.join(' ')} was accepted`);
};

describe('parseCommandArgs', () => {
  it('reads --name value and --name=value, typed, with defaults that do not count as given', () => {
    const args = parseCommandArgs(SPEC, ['x', '--mode=b', '--tag', 't1', '--tag=t2', '-y']);
    assert.deepEqual(args.positionals, ['x']);
    assert.equal(args.number('count'), 3);
    assert.equal(args.given('count'), false);
    assert.equal(args.text('mode'), 'b');
    assert.deepEqual(args.all('tag'), ['t1', 't2']);
    assert.equal(args.flag('yes'), true);
    assert.equal(args.flag('dry'), false);
    assert.equal(parseCommandArgs(SPEC, ['x', '--count', '7', '--count', '9']).number('count'), 9, 'the last one wins');
  });

  it('takes the next argument as the value, even one starting with a dash, unless it is an option', () => {
    assert.equal(refused(['x', '--count', '-5']), '--count: "-5" must be a whole number >= 1');
    assert.equal(parseCommandArgs(SPEC, ['x', '--tag', '-odd-']).all('tag')[0], '-odd-');
    assert.equal(refused(['x', '--tag', '--dry']), '--tag needs a value (T)');
    assert.equal(refused(['x', '--tag']), '--tag needs a value (T)');
  });

  it('knows an option family by each of its names, and checks each value under its own name', () => {
    assert.equal(parseCommandArgs(SPEC, ['x', '--two-key-env', 'V']).text('two-key-env'), 'V');
    assert.equal(refused(['x', '--three-key-env', 'V']), 'unknown option --three-key-env');
  });

  it('names what is wrong: unknown options, flags with values, bad choices, missing and extra arguments', () => {
    assert.equal(refused(['x', '--bogus']), 'unknown option --bogus');
    assert.equal(refused(['x', '-q']), 'unknown option -q');
    assert.equal(refused(['x', '--dry=1']), '--dry takes no value');
    assert.equal(refused(['x', '--mode', 'c']), '--mode: "c" must be a or b');
    assert.equal(refused([]), 'missing NAME: a name');
    assert.equal(refused(['x', 'y']), 'unexpected argument "y"');
    assert.deepEqual(parseCommandArgs(SPEC, ['--', '--dry']).positionals, ['--dry'], '`--` ends the options');
  });

  it('throws, as a programming error, when a handler reads an option the command does not have', () => {
    const args = parseCommandArgs(SPEC, ['x']);
    assert.throws(() => args.text('colour'), /try has no option --colour/);
  });
});

describe('help', () => {
  it('shows the usage, the summary, arguments and options with their defaults, and the example', () => {
    const text = commandHelp(SPEC);
    assert.ok(text.startsWith('usage: llmux try NAME'));
    assert.match(text, /\n {2}NAME +a name\n/);
    assert.match(text, /\n {2}--count N +how many \(default 3\)\n/);
    assert.match(text, /\n {2}--mode a\|b +the mode\n/);
    assert.match(text, /\n {2}-y, --yes +ask nothing\n/);
    assert.match(text, /\n {2}-h, --help +show this help\n/);
    assert.ok(text.endsWith('Example:\n  llmux try x --count 2\n'));
  });

  it('finds -h or --help before `--` only', () => {
    assert.equal(asksForHelp(['x', '-h']), true);
    assert.equal(asksForHelp(['--', '--help']), false);
    assert.equal(asksForHelp(['--helpful']), false);
  });

  it('lines up a usage line\'s continuation under its first line', () => {
    assert.equal(indentUsage('llmux a [--b]\n        [--c]', 2), 'llmux a [--b]\n          [--c]');
    assert.equal(orList(['a', 'b', 'c']), 'a, b or c');
  });
});
