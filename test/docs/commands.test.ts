/**
 * The shell commands of the user docs, checked as written where that is practical without running
 * them: every `llmux …` (and `npx … llmux`, `npm run -s llmux -- …`, `npm start -- …`) names a
 * command and options the CLI's command table knows, parsed by the CLI's own parser (the handlers
 * are not run); every `npm run X` names a script of package.json. The `curl`s to the local
 * gateway are checked against a running one in routes.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { commandTable, runCommandLine } from '../../src/commands/table.ts';
import type { CliIo } from '../../src/commands/io.ts';
import { docFiles, documentedCommands, readDoc } from '../helpers/markdown.ts';

const SCRIPTS = (JSON.parse(readDoc('package.json')) as { scripts: Record<string, string> }).scripts;

/** The real table with handlers that do nothing: only dispatch and parsing are exercised. */
const PARSE_ONLY = commandTable(async () => 0).map((spec) => ({ ...spec, run: async () => 0 }));

/** Runs `args` through the CLI's dispatch and parser: the exit code and what it printed on stderr. */
async function parse(args: readonly string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const io: CliIo = { env: {}, stdout: () => {}, stderr: (text) => { stderr += text; } };
  return { code: await runCommandLine(PARSE_ONLY, args, io), stderr };
}

/** The llmux arguments of a command line, whichever way it runs the CLI; undefined when it does not. */
function llmuxArgs(words: readonly string[]): string[] | undefined {
  const [first, ...rest] = words;
  if (first === 'llmux' || first === 'dist/llmux' || (first === 'node' && rest[0] === 'dist/cli.cjs')) return first === 'node' ? rest.slice(1) : rest;
  if (first === 'npx') {
    const at = rest.indexOf('llmux');
    return at === -1 ? undefined : rest.slice(at + 1);
  }
  if (first === 'npm' && rest[0] === 'start') return ['serve', ...rest.slice(rest.indexOf('--') + 1 || rest.length)];
  if (first === 'npm' && rest[0] === 'run' && rest.includes('llmux')) return rest.slice(rest.indexOf('--') + 1 || rest.length);
  return undefined;
}

/** The script an `npm run` / `npm start` / `npm test` names; undefined for other commands. */
function npmScript(words: readonly string[]): string | undefined {
  if (words[0] !== 'npm') return undefined;
  if (words[1] === 'start' || words[1] === 'test') return words[1];
  if (words[1] !== 'run' && words[1] !== 'run-script') return undefined;
  return words.slice(2).find((word) => !word.startsWith('-'));
}

const ALL = docFiles().flatMap((file) => documentedCommands(file));

describe('the shell commands of the docs', () => {
  it('are found: the quick start\'s, the keys\', the CLI reference\'s', () => {
    assert.ok(ALL.filter((c) => llmuxArgs(c.words) !== undefined).length >= 25, 'llmux commands');
    assert.ok(ALL.filter((c) => npmScript(c.words) !== undefined).length >= 4, 'npm scripts');
    assert.ok(ALL.some((c) => c.where.startsWith('README.md') && c.words.join(' ') === 'npm run -s llmux -- keys create --name quickstart'));
  });

  for (const file of docFiles()) {
    const commands = ALL.filter((c) => c.where.startsWith(`${file}:`));
    if (commands.length === 0) continue;
    it(`in ${file}, every llmux command parses with the CLI's own parser and every npm script exists`, async () => {
      const wrong: string[] = [];
      for (const { where, words } of commands) {
        const script = npmScript(words);
        if (script !== undefined && !Object.hasOwn(SCRIPTS, script)) wrong.push(`${where}: ${words.join(' ')}: package.json has no script "${script}"`);
        const args = llmuxArgs(words);
        if (args === undefined) continue;
        const { code, stderr } = await parse(args);
        if (code !== 0) wrong.push(`${where}: llmux ${args.join(' ')}: exit ${code}: ${stderr.trim()}`);
      }
      assert.deepEqual(wrong, []);
    });
  }

  it('include docs/cli.md, a section per command of the table naming each of its options', () => {
    const page = readDoc('docs/cli.md');
    for (const spec of PARSE_ONLY) {
      const name = `llmux ${spec.path.join(' ')}`;
      const at = page.indexOf(`## \`${name}\``);
      assert.ok(at !== -1, `docs/cli.md has a section for ${name}`);
      const section = page.slice(at, page.indexOf('\n## ', at + 1) === -1 ? undefined : page.indexOf('\n## ', at + 1));
      for (const option of spec.options) assert.ok(section.includes(`--${option.name}`), `${name}: --${option.name}`);
      assert.ok(section.includes(spec.example), `${name}: its example`);
    }
  });

  it('would catch an unknown command, an unknown flag and a bad value', async () => {
    assert.equal((await parse(['keys', 'make'])).code, 2);
    assert.equal((await parse(['serve', '--prot', '1'])).code, 2);
    assert.equal((await parse(['keys', 'create', '--rpm', 'N'])).code, 2);
    assert.equal((await parse(['keys', 'create', '--name', 'ci', '--rpm', '3'])).code, 0);
    assert.deepEqual(llmuxArgs(['npx', '--package', './llmux-0.1.0.tgz', 'llmux', '--version']), ['--version']);
    assert.deepEqual(llmuxArgs(['npm', 'start', '--', '--port', '0']), ['serve', '--port', '0']);
    assert.deepEqual(llmuxArgs(['npm', 'run', '-s', 'llmux', '--', 'keys', 'list']), ['keys', 'list']);
    assert.equal(npmScript(['npm', 'run', '-s', 'bench', '--', '--quick']), 'bench');
  });
});
