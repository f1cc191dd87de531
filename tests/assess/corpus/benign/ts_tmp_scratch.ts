import { writeFileSync, readFileSync, unlinkSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';

const scratch: string = join(tmpdir(), 'ts-scratch.txt');
writeFileSync(scratch, 'hello');
console.log(readFileSync(scratch, 'utf8'));
unlinkSync(scratch);
