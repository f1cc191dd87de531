import * as fs from 'fs';
import * as path from 'path';

const target = path.join(process.cwd(), '../../../../etc/passwd');
console.log(fs.readFileSync(target, 'utf8'));
