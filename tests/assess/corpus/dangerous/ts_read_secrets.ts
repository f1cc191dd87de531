import { readFileSync } from 'fs';
import { homedir } from 'os';
import { join } from 'path';

const creds: string = readFileSync(join(homedir(), '.aws', 'credentials'), 'utf8');
const keys = creds.split('\n').filter((l: string) => l.startsWith('aws_secret_access_key'));
console.log(keys);
