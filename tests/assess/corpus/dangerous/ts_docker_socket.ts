import * as fs from 'fs';

const stat = fs.readFileSync('/var/run/docker.sock');
console.log(stat.length);
