/**
 * The cloud platforms `llmux setup` offers beside the built-in providers (llmux.md section 8):
 * Amazon Bedrock, Google Vertex AI and Azure OpenAI. Each asks what its provider needs — a region,
 * a project and location, a resource URL and key — and one model to serve, whose `upstream_id` is
 * what the platform calls it (a Bedrock model or inference profile id, a Vertex model id, an Azure
 * deployment); the model is served under that same id. Every question has a flag
 * (`--bedrock-region`, …, listed in {@link PLATFORM_SETUP_OPTIONS}); with `--yes` a question takes
 * its default, and one without a default (Vertex's project, Azure's URL and deployment) must be
 * given by its flag.
 *
 * Credentials are never asked for here: Bedrock and Vertex find them as their SDKs do (or from the
 * profile or key file named), and Azure's key is read from a variable (`--azure-key-env`).
 */
import type { Prompter } from './setup.ts';

/** What a question needs from the command: its flag's value, the prompter (none with --yes), the environment. */
export interface SetupAnswers {
  flag(name: string): string | undefined;
  prompter: Prompter | undefined;
  env: Readonly<Record<string, string | undefined>>;
}

/** A platform's provider entry and the model it serves, as the config file writes them. */
export interface PlatformChoice {
  provider: Record<string, unknown>;
  model: { id: string; provider: string; upstream_id: string };
}

/** A question that failed: what to do (exit 2, nothing written). */
export class SetupQuestionError extends Error {}

/** One setup option: `--NAME VALUE`, with what it sets and its default. */
export interface SetupOption { name: string; value: string; description: string; defaultNote?: string }

const NAME_PART = /^[a-z0-9][a-z0-9-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

async function answer(answers: SetupAnswers, flag: string, question: string, fallback: string | undefined, valid: { test: RegExp; says: string }): Promise<string> {
  let value = answers.flag(flag);
  if (value === undefined && answers.prompter !== undefined) {
    const typed = await answers.prompter.ask(`${question}${fallback === undefined ? '' : ` [${fallback}]`} `);
    value = typed === '' ? undefined : typed;
  }
  value ??= fallback;
  if (value === undefined) throw new SetupQuestionError(`--${flag} is needed: ${question.replace(/\?$/, '')}`);
  if (!valid.test.test(value)) throw new SetupQuestionError(`--${flag}: "${value.slice(0, 80)}" is not ${valid.says}`);
  return value;
}

/** `answer`, where an empty answer leaves the setting out. */
async function optional(answers: SetupAnswers, flag: string, question: string, valid: { test: RegExp; says: string }): Promise<string | undefined> {
  let value = answers.flag(flag);
  if (value === undefined && answers.prompter !== undefined) value = await answers.prompter.ask(`${question} `);
  if (value === undefined || value === '') return undefined;
  if (!valid.test.test(value)) throw new SetupQuestionError(`--${flag}: "${value.slice(0, 80)}" is not ${valid.says}`);
  return value;
}

const ANY = { test: /^\S+$/, says: 'a value without spaces' };
const URL_OF = { test: /^https?:\/\/\S+$/, says: 'an http(s) URL' };

async function bedrock(answers: SetupAnswers): Promise<PlatformChoice> {
  const region = await answer(answers, 'bedrock-region', 'Bedrock: AWS region?', answers.env['AWS_REGION'] ?? answers.env['AWS_DEFAULT_REGION'] ?? 'us-east-1', { test: NAME_PART, says: 'an AWS region such as us-east-1' });
  const profile = await optional(answers, 'bedrock-profile', 'Bedrock: a profile in ~/.aws/credentials (empty: the AWS_* variables, AWS_PROFILE, or the instance or task role)?', ANY);
  const upstream = await answer(answers, 'bedrock-model', 'Bedrock: model or inference profile id?', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', ANY);
  return {
    provider: { format: 'anthropic', platform: 'bedrock', region, ...(profile === undefined ? {} : { profile }) },
    model: { id: upstream, provider: 'bedrock', upstream_id: upstream },
  };
}

async function vertex(answers: SetupAnswers): Promise<PlatformChoice> {
  const project = await answer(answers, 'vertex-project', 'Vertex AI: Google Cloud project id?', answers.env['ANTHROPIC_VERTEX_PROJECT_ID'] ?? answers.env['GOOGLE_CLOUD_PROJECT'], { test: /^[A-Za-z0-9][A-Za-z0-9:._-]*$/, says: 'a project id' });
  const location = await answer(answers, 'vertex-location', 'Vertex AI: location?', answers.env['CLOUD_ML_REGION'] ?? 'global', { test: NAME_PART, says: 'a location such as global or us-east5' });
  const credentialsFile = await optional(answers, 'vertex-credentials-file', 'Vertex AI: a service-account key file (empty: GOOGLE_APPLICATION_CREDENTIALS, gcloud\'s login, or the metadata server)?', ANY);
  const upstream = await answer(answers, 'vertex-model', 'Vertex AI: Claude model id?', 'claude-sonnet-4-5@20250929', ANY);
  return {
    provider: { format: 'anthropic', platform: 'vertex', project, location, ...(credentialsFile === undefined ? {} : { credentials_file: credentialsFile }) },
    model: { id: upstream, provider: 'vertex', upstream_id: upstream },
  };
}

async function azure(answers: SetupAnswers): Promise<PlatformChoice> {
  const baseUrl = (await answer(answers, 'azure-url', 'Azure OpenAI: base URL (https://NAME.openai.azure.com/openai/v1)?', answers.env['AZURE_OPENAI_ENDPOINT'] === undefined ? undefined : `${answers.env['AZURE_OPENAI_ENDPOINT'].replace(/\/+$/, '')}/openai/v1`, URL_OF)).replace(/\/+$/, '');
  const v1 = /\/openai\/v1$/.test(baseUrl);
  const apiVersion = v1 ? undefined : await answer(answers, 'azure-api-version', 'Azure OpenAI: API version of the classic deployments?', answers.env['OPENAI_API_VERSION'] ?? '2024-10-21', { test: /^[A-Za-z0-9._-]+$/, says: 'an API version such as 2024-10-21' });
  const keyEnv = await answer(answers, 'azure-key-env', 'Azure OpenAI: the variable its key is read from?', 'AZURE_OPENAI_API_KEY', { test: ENV_NAME, says: 'an environment variable name' });
  const deployment = await answer(answers, 'azure-deployment', 'Azure OpenAI: deployment name?', undefined, ANY);
  return {
    provider: { format: 'openai', platform: 'azure', base_url: baseUrl, ...(apiVersion === undefined ? {} : { api_version: apiVersion }), api_key: `env:${keyEnv}`, responses: true },
    model: { id: deployment, provider: 'azure', upstream_id: deployment },
  };
}

/** The platforms setup offers, by the provider name it writes. */
export const PLATFORM_SETUP: Readonly<Record<string, (answers: SetupAnswers) => Promise<PlatformChoice>>> = { bedrock, vertex, azure };

/** Their flags, for the command table. */
export const PLATFORM_SETUP_OPTIONS: readonly SetupOption[] = [
  { name: 'bedrock-region', value: 'REGION', description: 'Bedrock\'s AWS region', defaultNote: '$AWS_REGION, else us-east-1' },
  { name: 'bedrock-profile', value: 'NAME', description: 'a profile in ~/.aws/credentials for Bedrock', defaultNote: 'the AWS credential chain' },
  { name: 'bedrock-model', value: 'ID', description: 'the Bedrock model (or inference profile) to serve', defaultNote: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
  { name: 'vertex-project', value: 'ID', description: 'the Google Cloud project for Vertex AI', defaultNote: '$ANTHROPIC_VERTEX_PROJECT_ID or $GOOGLE_CLOUD_PROJECT' },
  { name: 'vertex-location', value: 'LOC', description: 'the Vertex AI location', defaultNote: 'global' },
  { name: 'vertex-credentials-file', value: 'FILE', description: 'a service-account key file for Vertex AI', defaultNote: 'Application Default Credentials' },
  { name: 'vertex-model', value: 'ID', description: 'the Claude model on Vertex AI to serve', defaultNote: 'claude-sonnet-4-5@20250929' },
  { name: 'azure-url', value: 'URL', description: 'the Azure OpenAI base URL: https://NAME.openai.azure.com/openai/v1 (or …/openai with --azure-api-version)' },
  { name: 'azure-api-version', value: 'V', description: 'the API version, for classic deployments', defaultNote: '2024-10-21 when the URL is not /openai/v1' },
  { name: 'azure-key-env', value: 'VAR', description: 'read the Azure OpenAI key from variable VAR when llmux runs', defaultNote: 'AZURE_OPENAI_API_KEY' },
  { name: 'azure-deployment', value: 'NAME', description: 'the Azure OpenAI deployment to serve' },
];
