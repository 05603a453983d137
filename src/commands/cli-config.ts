/**
 * The config as a command that is not a server sees it: a broken config file must not stop key
 * management or a usage report, so it falls back to the environment and the built-in defaults
 * (the state URL of LLMUX_STATE_URL, the default tiers). `llmux serve`, `models` and `doctor` load
 * the file strictly instead.
 */
import { loadConfig } from '../config/load.ts';
import type { Config } from '../config/types.ts';
import type { CliIo } from './io.ts';

/** The config of `home` (and `configPath`), or, when that file does not load, of the environment alone. */
export function cliConfig(io: CliIo, options: { home?: string | undefined; configPath?: string | undefined } = {}): Config {
  try {
    return loadConfig({ env: io.env, home: options.home, configPath: options.configPath });
  } catch {
    return loadConfig({ env: io.env, home: options.home, file: {} });
  }
}
