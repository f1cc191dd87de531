const readline = require('readline');

const rl = readline.createInterface({ input: process.stdin });
let count = 0;
rl.on('line', (line) => { if (line.trim()) count++; });
rl.on('close', () => console.log('lines:', count));
