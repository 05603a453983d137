/**
 * `llmux models`: the models usable now, with this environment's credentials and the config. A
 * cloud platform's models are listed only when its credentials resolve, checked as the gateway
 * checks them at start-up (bounded, so a machine without a metadata service answers quickly).
 */
import { loadConfig } from '../config/load.ts';
import { createCatalog } from '../catalog/catalog.ts';
import { resolveSecret } from '../catalog/providers.ts';
import { createCarriers } from '../platforms/index.ts';
import { createCredentialWatch } from '../platforms/credential-watch.ts';
import type { ParsedArgs } from './args.ts';
import type { CliIo } from './io.ts';

/** How long platform credentials may take to resolve before their models are left out. */
const PLATFORM_CREDENTIALS_WAIT_MS = 5_000;

export async function listModels(args: ParsedArgs, io: CliIo): Promise<number> {
  const config = loadConfig({ env: io.env, configPath: args.text('config'), home: args.text('home') });
  const carriers = createCarriers({ secret: (written) => resolveSecret(written, config.env), env: config.env, now: Date.now });
  const watch = createCredentialWatch({ providers: Object.values(config.providers), carriers });
  await watch.check(PLATFORM_CREDENTIALS_WAIT_MS);
  const catalog = createCatalog({
    providers: config.providers,
    models: config.models,
    builtinCatalog: config.builtinCatalog,
    env: config.env,
    platformUsable: (provider) => watch.usable(provider),
  });
  const list = catalog.list();
  if (args.flag('json')) {
    io.stdout(`${JSON.stringify(list.map((m) => ({ id: m.id, provider: m.provider, upstream_id: m.upstream_id })), null, 2)}\n`);
    return 0;
  }
  for (const m of list) io.stdout(`${m.id.padEnd(40)} ${m.provider.padEnd(12)} ctx ${m.context_length}\n`);
  return 0;
}
