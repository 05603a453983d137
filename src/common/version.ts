/** The llmux version, kept in step with package.json by test/version.test.ts. */
export const VERSION = '0.1.0';
