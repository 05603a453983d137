// Prints the test files under test/ (Node 20's --test does not expand globs itself).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const files = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (entry.name.endsWith('.test.ts')) files.push(path);
  }
};
walk(process.argv[2] ?? 'test');
process.stdout.write(files.sort().join('\n'));
