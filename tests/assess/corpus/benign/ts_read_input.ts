import { readFileSync, existsSync } from 'fs';

interface Row { name: string; score: number }

const file: string = process.argv[2] ?? 'scores.json';
const rows: Row[] = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
const best = rows.reduce((a: Row | null, r: Row) => (!a || r.score > a.score ? r : a), null);
console.log(best);
