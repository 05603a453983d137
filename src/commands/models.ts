/** `llmux models`: the models usable now, with this environment's credentials and the config. */
import { loadConfig } from '../config/load.ts';
import { createCatalog } from '../catalog/catalog.ts';
import type { ParsedArgs } from './args.ts';
import type { CliIo } from './io.ts';

export async function listModels(args: ParsedArgs, io: CliIo): Promise<number> {
  const config = loadConfig({ env: io.env, configPath: args.text('config'), home: args.text('home') });
  const catalog = createCatalog({ providers: config.providers, models: config.models, builtinCatalog: config.builtinCatalog, env: config.env });
  const list = catalog.list();
  if (args.flag('json')) {
    io.stdout(`${JSON.stringify(list.map((m) => ({ id: m.id, provider: m.provider, upstream_id: m.upstream_id })), null, 2)}\n`);
    return 0;
  }
  for (const m of list) io.stdout(`${m.id.padEnd(40)} ${m.provider.padEnd(12)} ctx ${m.context_length}\n`);
  return 0;
}
