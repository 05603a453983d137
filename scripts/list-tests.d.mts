// Types for scripts/list-tests.mjs, which test/tiers.test.ts imports.
export declare const SYSTEM_DIRS: readonly string[];
export declare const SYSTEM_FILES: Readonly<Record<string, string>>;
export declare function testFilesUnder(root: string, skipped?: readonly string[]): string[];
export declare function tierOf(file: string): 'unit' | 'system';
export declare function tierFiles(tier?: 'unit' | 'system'): string[];
