import * as fs from 'fs';
import * as path from 'path';

const outDir: string = path.join(process.cwd(), 'output');
fs.mkdirSync(outDir, { recursive: true });
const lines: string[] = ['a,1', 'b,2'];
fs.writeFileSync(path.join(outDir, 'table.csv'), lines.join('\n'));
console.log('wrote', lines.length);
