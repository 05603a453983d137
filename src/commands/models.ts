/**
 * `llmux models`: the models usable now, with this environment's credentials and the config; a
 * model with several deployments (llmux.md section 10) shows each, with its weight and limits and
 * whether its provider's credentials resolve here; literal aliases show as models of their target.
 * A cloud platform's models are listed only when its credentials resolve, checked as the gateway
 * checks them at start-up (bounded, so a machine without a metadata service answers quickly).
 * Models a `"discover": true` provider lists are read by the server only (`GET /v1/models` shows them).
 */
import { loadConfig } from '../config/load.ts';
import type { ModelEntry } from '../config/types.ts';
import { createCatalog } from '../catalog/catalog.ts';
import { withAliases } from '../catalog/aliases.ts';
import { isProviderUsable, resolveSecret } from '../catalog/providers.ts';
import { createCarriers } from '../platforms/index.ts';
import { createCredentialWatch } from '../platforms/credential-watch.ts';
import { deploymentId } from '../routing/index.ts';
import type { ParsedArgs } from './args.ts';
import type { CliIo } from './io.ts';

/** How long platform credentials may take to resolve before their models are left out. */
const PLATFORM_CREDENTIALS_WAIT_MS = 5_000;

interface DeploymentRow {
  deployment: string;
  provider: string;
  upstream_id: string;
  weight: number;
  rpm?: number;
  tpm?: number;
  /** The provider's credentials resolve in this environment. */
  usable: boolean;
}

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
  const models = catalog.list();
  const list = withAliases(models, config.routing?.aliases ?? []);
  const aliasOf = new Map((config.routing?.aliases ?? []).map((alias) => [alias.pattern, alias.target]));
  const deploymentsOf = (m: ModelEntry): DeploymentRow[] => (m.deployments ?? []).map((d) => {
    const provider = catalog.provider(d.provider);
    return {
      deployment: deploymentId(d.provider, d.upstream_id),
      provider: d.provider,
      upstream_id: d.upstream_id,
      weight: d.weight,
      ...(d.rpm === undefined ? {} : { rpm: d.rpm }),
      ...(d.tpm === undefined ? {} : { tpm: d.tpm }),
      usable: provider !== undefined && (watch.usable(provider) ?? isProviderUsable(provider, config.env)),
    };
  });
  const isAlias = (m: ModelEntry): boolean => !models.includes(m);
  if (args.flag('json')) {
    io.stdout(`${JSON.stringify(list.map((m) => ({
      id: m.id,
      provider: m.provider,
      upstream_id: m.upstream_id,
      ...(isAlias(m) ? { alias_of: aliasOf.get(m.id) } : {}),
      ...(m.deployments === undefined || isAlias(m) ? {} : { routing: m.routing ?? 'weighted', sticky: m.sticky !== false, deployments: deploymentsOf(m) }),
    })), null, 2)}\n`);
    return 0;
  }
  for (const m of list) {
    if (isAlias(m)) {
      io.stdout(`${m.id.padEnd(40)} alias of ${aliasOf.get(m.id) ?? ''}\n`);
      continue;
    }
    if (m.deployments === undefined || (m.deployments.length === 1 && m.routing === undefined)) {
      io.stdout(`${m.id.padEnd(40)} ${m.provider.padEnd(12)} ctx ${m.context_length}\n`);
      continue;
    }
    io.stdout(`${m.id.padEnd(40)} ${`${m.deployments.length} deployments`.padEnd(12)} ctx ${m.context_length}  ${m.routing ?? 'weighted'}${m.sticky === false ? '' : ', sticky'}\n`);
    for (const d of deploymentsOf(m)) {
      const limits = `${d.rpm === undefined ? '' : `  rpm ${d.rpm}`}${d.tpm === undefined ? '' : `  tpm ${d.tpm}`}`;
      io.stdout(`  ${d.deployment.padEnd(50)} weight ${d.weight}${limits}${d.usable ? '' : '  (no credential here)'}\n`);
    }
  }
  return 0;
}
