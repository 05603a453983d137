/**
 * Every `llmux` command, described once: the parser, each command's `--help`, `llmux --help` and
 * the usage errors all come from this table (see `args.ts`). Handlers are loaded when their
 * command runs: `llmux --version` and `llmux keys list` should not pay for the gateway or the
 * usage ledger. `serve` is handed in by the entry point, the only place that may start a gateway.
 */
import type { CliIo } from './io.ts';
import { UsageError, asksForHelp, commandHelp, groupHelp, indentUsage, orList, parseCommandArgs, usageFailure } from './args.ts';
import type { CommandSpec, Handler, OptionSpec } from './args.ts';
import { TIER_NAMES } from '../config/types.ts';
import { builtinProviders } from '../catalog/providers.ts';
import { PLATFORM_SETUP, PLATFORM_SETUP_OPTIONS } from './setup-platforms.ts';
import { VERSION } from '../common/version.ts';

const home: OptionSpec = { name: 'home', kind: 'text', value: 'DIR', description: 'llmux\'s home: key store, usage and config.json', defaultNote: '$LLMUX_HOME, else ~/.llmux' };
const config: OptionSpec = { name: 'config', kind: 'text', value: 'FILE', description: 'the config file', defaultNote: '$LLMUX_CONFIG, else $LLMUX_HOME/config.json when it exists' };
const json: OptionSpec = { name: 'json', kind: 'flag', description: 'print JSON instead of a table' };
const serverUrl: OptionSpec = { name: 'url', kind: 'text', value: 'URL', description: 'the llmux server', defaultNote: '$LLMUX_URL, else http://127.0.0.1:8686' };
const userCode = { name: 'USER_CODE', description: 'the code the device shows, like WDJB-MJHT' };
const tier = (description: string): OptionSpec => ({ name: 'tier', kind: 'choice', choices: TIER_NAMES, description, default: 'basic' });

/** Providers whose key `llmux setup` can point at a variable: `--openai-key-env VAR`, … */
const KEYED_PROVIDERS = Object.values(builtinProviders({})).filter((p) => !p.keyless).map((p) => p.id);

/** Loads a command module's handler on first use. */
function lazy<M>(load: () => Promise<M>, pick: (module: M) => Handler): Handler {
  return async (args, io) => pick(await load())(args, io);
}

/** The table, with `serve` from the entry point. */
export function commandTable(serve: Handler): readonly CommandSpec[] {
  const keys = () => import('./keys.ts');
  const device = () => import('./device.ts');
  return [
    {
      path: ['serve'],
      summary: 'Run the gateway until SIGTERM or Ctrl-C (which let open requests finish first).',
      usage: 'llmux serve [--host H] [--port N] [--config FILE] [--home DIR]',
      options: [
        { name: 'host', kind: 'text', value: 'H', description: 'the address to listen on', defaultNote: '$LLMUX_HOST, else 127.0.0.1' },
        { name: 'port', kind: 'port', value: 'N', description: 'the port; 0 picks a free one', defaultNote: '$LLMUX_PORT, else 8686' },
        config,
        home,
      ],
      notes: 'On the first start with an empty key store, an admin key is made and printed once on stderr.\nWhen listening it prints one line on stdout: llmux listening on http://HOST:PORT',
      example: 'llmux serve --port 8686 --config ./llmux.json',
      run: serve,
    },
    {
      path: ['keys', 'create'],
      summary: 'Make a client key: the key alone on stdout (shown once), its details on stderr.',
      usage: 'llmux keys create [--name NAME] [--tier basic|pro|enterprise] [--rpm N] [--tpm N] [--concurrency N]\n'
        + '                  [--models ID,ID] [--admin] [--expires-in 30d] [--budget-usd 25 [--budget-period day|month]] [--home DIR]',
      options: [
        { name: 'name', kind: 'text', value: 'NAME', description: 'a name to find it by', defaultNote: 'its id' },
        tier('its tier, which gives its limits'),
        { name: 'rpm', kind: 'whole', value: 'N', description: 'requests a minute, instead of the tier\'s' },
        { name: 'tpm', kind: 'whole', value: 'N', description: 'tokens a minute, instead of the tier\'s' },
        { name: 'concurrency', kind: 'whole', value: 'N', description: 'requests at once, instead of the tier\'s' },
        { name: 'models', kind: 'list', value: 'ID,ID', description: 'the only models it may use', defaultNote: 'all' },
        { name: 'admin', kind: 'flag', description: 'may sign in to the dashboard and approve devices' },
        { name: 'expires-in', kind: 'text', value: '30d', description: 'a lifetime: 30d, 12h, 15m or 45s', defaultNote: 'never expires' },
        { name: 'budget-usd', kind: 'usd', value: 'USD', description: 'a spending budget in US dollars, instead of the tier\'s' },
        { name: 'budget-period', kind: 'choice', choices: ['day', 'month'], description: 'how often the budget starts again, in UTC', defaultNote: 'month' },
        home,
      ],
      example: 'llmux keys create --name laptop --tier pro --budget-usd 25',
      run: lazy(keys, (m) => m.createKey),
    },
    {
      path: ['keys', 'list'],
      summary: 'List the keys, without their secrets.',
      usage: 'llmux keys list [--json] [--home DIR]',
      options: [json, home],
      example: 'llmux keys list --json',
      run: lazy(keys, (m) => m.listKeys),
    },
    {
      path: ['keys', 'revoke'],
      summary: 'Revoke a key by its id or name; requests with it get 401 at once.',
      usage: 'llmux keys revoke ID|NAME [--home DIR]',
      args: [{ name: 'ID|NAME', description: 'the key\'s id (key_…) or name' }],
      options: [home],
      example: 'llmux keys revoke laptop',
      run: lazy(keys, (m) => m.revokeKey),
    },
    {
      path: ['models'],
      summary: 'List the models usable now, with this environment\'s credentials and the config.',
      usage: 'llmux models [--json] [--config FILE] [--home DIR]',
      options: [json, config, home],
      example: 'llmux models --json',
      run: lazy(() => import('./models.ts'), (m) => m.listModels),
    },
    {
      path: ['usage'],
      summary: 'Usage and cost from the usage ledger (or the state server), as a table or as GET /v1/usage\'s JSON.',
      usage: 'llmux usage [--since 7d] [--until TIME] [--by day|hour|model|key] [--key ID|NAME|all] [--json] [--home DIR]',
      options: [
        { name: 'since', kind: 'text', value: '7d', description: 'a duration back from now (7d, 12h, 30m) or an ISO 8601 date or time', default: '7d' },
        { name: 'until', kind: 'text', value: 'TIME', description: 'the same forms as --since', defaultNote: 'now' },
        { name: 'by', kind: 'text', value: 'day|hour|model|key', description: 'one grouping, or several separated by commas (day,model)', default: 'day' },
        { name: 'key', kind: 'text', value: 'ID|NAME|all', description: 'one key\'s usage', default: 'all' },
        json,
        home,
      ],
      example: 'llmux usage --since 30d --by model',
      run: lazy(() => import('./usage.ts'), (m) => m.runUsage),
    },
    {
      path: ['setup'],
      summary: 'First-run setup: providers and their keys into $LLMUX_HOME/config.json, a client key, and the lines for tools.',
      usage: 'llmux setup [--provider NAME[,NAME…]]… [--NAME-key-env VAR]… [--ollama-url URL] [--key-name NAME]\n'
        + '            [--bedrock-region R] [--bedrock-profile P] [--bedrock-model ID] [--vertex-project ID] [--vertex-location L]\n'
        + '            [--vertex-credentials-file F] [--vertex-model ID] [--azure-url URL] [--azure-api-version V]\n'
        + '            [--azure-key-env VAR] [--azure-deployment D]\n'
        + '            [--tier basic|pro|enterprise] [--url URL] [--home DIR] [--force] [--yes | --non-interactive]',
      options: [
        { name: 'provider', kind: 'text', value: 'NAME', multiple: true, description: `enable a provider (repeat, or separate with commas): ${[...Object.keys(builtinProviders({})), ...Object.keys(PLATFORM_SETUP)].join(', ')}` },
        { name: 'NAME-key-env', kind: 'text', value: 'VAR', family: KEYED_PROVIDERS.map((id) => `${id}-key-env`), description: 'read provider NAME\'s key from variable VAR when llmux runs', defaultNote: 'its usual variable, e.g. OPENAI_API_KEY' },
        { name: 'ollama-url', kind: 'text', value: 'URL', description: 'where Ollama listens', defaultNote: 'http://localhost:11434/v1' },
        ...PLATFORM_SETUP_OPTIONS.map((option) => ({ kind: 'text' as const, ...option })),
        { name: 'key-name', kind: 'text', value: 'NAME', description: 'the client key\'s name', defaultNote: 'setup' },
        tier('the client key\'s tier'),
        { name: 'url', kind: 'text', value: 'URL', description: 'the address printed for tools', defaultNote: 'from $LLMUX_HOST and $LLMUX_PORT, else http://127.0.0.1:8686' },
        home,
        { name: 'force', kind: 'flag', description: 'update an existing config.json without asking (its other settings are kept)' },
        { name: 'yes', short: 'y', kind: 'flag', description: 'ask nothing; take the defaults' },
        { name: 'non-interactive', kind: 'flag', description: 'the same as --yes' },
      ],
      notes: 'Asks each question not answered by a flag. Typed keys are stored in config.json (mode 0600) and never shown.\n'
        + 'It prints the lines that point Claude Code and OpenAI-based tools at llmux.',
      example: 'llmux setup --provider anthropic,openai --yes',
      run: lazy(() => import('./setup.ts'), (m) => m.runSetup),
    },
    {
      path: ['device', 'approve'],
      summary: 'Approve a device request on a running server; the device gets its key when it next polls.',
      usage: 'llmux device approve USER_CODE [--tier basic|pro|enterprise] [--name NAME] [--url URL]',
      args: [userCode],
      options: [
        tier('the new key\'s tier'),
        { name: 'name', kind: 'text', value: 'NAME', description: 'the new key\'s name', defaultNote: 'the name the device gave' },
        serverUrl,
      ],
      notes: 'The admin key is read from LLMUX_ADMIN_KEY (never a flag, so it stays out of shell history).',
      example: 'LLMUX_ADMIN_KEY=sk-llmux-… llmux device approve WDJB-MJHT --tier pro',
      run: lazy(device, (m) => m.approveDevice),
    },
    {
      path: ['device', 'deny'],
      summary: 'Deny a device request on a running server.',
      usage: 'llmux device deny USER_CODE [--url URL]',
      args: [userCode],
      options: [serverUrl],
      notes: 'The admin key is read from LLMUX_ADMIN_KEY.',
      example: 'LLMUX_ADMIN_KEY=sk-llmux-… llmux device deny WDJB-MJHT',
      run: lazy(device, (m) => m.denyDevice),
    },
    {
      path: ['state', 'migrate'],
      summary: 'Copy a key store and its usage from a LLMUX_HOME into the state server (state.url or LLMUX_STATE_URL).',
      usage: 'llmux state migrate --from-home DIR [--config FILE]',
      options: [
        { name: 'from-home', kind: 'text', value: 'DIR', required: true, description: 'the LLMUX_HOME to copy from (left unchanged)' },
        config,
      ],
      notes: 'Keys already on the server (same id) are left as they are; running it twice adds the usage once.',
      example: 'LLMUX_STATE_URL=redis://127.0.0.1:6379 llmux state migrate --from-home ~/.llmux',
      run: lazy(() => import('./state.ts'), (m) => m.runMigrate),
    },
    {
      path: ['doctor'],
      summary: 'Check the config llmux would serve with: each provider\'s credential and endpoint, the state server, the key store.',
      usage: 'llmux doctor [--config FILE] [--home DIR] [--json] [--timeout-ms N]',
      options: [
        config,
        home,
        { name: 'json', kind: 'flag', description: 'print the checks as JSON' },
        { name: 'timeout-ms', kind: 'whole', value: 'N', description: 'how long each endpoint may take to answer', default: '5000' },
      ],
      notes: 'A row per check (ok, warn, FAIL, off) with a hint under each problem. It reads the same flags and variables as\n'
        + '`llmux serve`. Exit 0 when everything needed passes, 1 when something needed fails; a provider no model uses only warns.',
      example: 'llmux doctor --config ./llmux.json',
      run: lazy(() => import('./doctor.ts'), (m) => m.runDoctor),
    },
  ];
}

/** `llmux --help`: every command's usage line and what it does. */
export function topHelp(commands: readonly CommandSpec[]): string {
  return `llmux ${VERSION} — one address for many models

Usage:
${commands.map((c) => `  ${indentUsage(c.usage, 2)}\n      ${c.summary}`).join('\n')}
  llmux --version

Run "llmux COMMAND --help" (or "llmux help COMMAND") for a command's options and an example.

Environment: LLMUX_HOST, LLMUX_PORT, LLMUX_CONFIG, LLMUX_HOME (default ~/.llmux), LLMUX_STATE_URL
(a Valkey/Redis server several processes share; \`llmux keys\` then works on its keys),
<PROVIDER>_API_KEY for each provider, LLMUX_ADMIN_KEY for \`llmux device\`.
Exit codes: 0 done, 1 failed, 2 usage error.
`;
}

/**
 * Runs argv against the table: help, a command, or a usage error (exit 2). Errors a handler
 * throws other than UsageError are failures (exit 1) with their message.
 */
export async function runCommandLine(commands: readonly CommandSpec[], argv: readonly string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    io.stdout(topHelp(commands));
    return 2;
  }
  if (first === '--help' || first === '-h') {
    io.stdout(topHelp(commands));
    return 0;
  }
  if (first === '--version' || first === '-v' || first === 'version') {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  if (first === 'help') {
    if (rest.length === 0) {
      io.stdout(topHelp(commands));
      return 0;
    }
    return runCommandLine(commands, [...rest, '--help'], io);
  }
  const group = commands.filter((c) => c.path[0] === first);
  if (group.length === 0) return usageFailure(io, [], `unknown command "${first}"`);

  let spec = group.find((c) => c.path.length === 1);
  let args = rest;
  if (spec === undefined) {
    const [sub, ...subArgs] = rest;
    const names = group.map((c) => c.path[1] as string);
    if (sub === '--help' || sub === '-h') {
      io.stdout(groupHelp(first, group));
      return 0;
    }
    spec = group.find((c) => c.path[1] === sub);
    if (spec === undefined) return usageFailure(io, [first], `expected ${orList(names)}${sub === undefined ? '' : `, not "${sub}"`}`);
    args = subArgs;
  }
  if (asksForHelp(args)) {
    io.stdout(commandHelp(spec));
    return 0;
  }
  try {
    return await spec.run(parseCommandArgs(spec, args), io);
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(io, spec.path, error.message);
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`${message.startsWith('llmux:') ? '' : 'llmux: '}${message}\n`);
    return 1;
  }
}
