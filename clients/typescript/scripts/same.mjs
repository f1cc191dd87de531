// The committed types against ones generated now from docs/openapi.json: they must not drift.
import { readFileSync } from 'node:fs';

const [committed, fresh] = process.argv.slice(2);
if (readFileSync(committed, 'utf8') !== readFileSync(fresh, 'utf8')) {
  console.error(`${committed} is not what docs/openapi.json generates: run npm run generate`);
  process.exit(1);
}
