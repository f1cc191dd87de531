const fs = require('fs');
const path = require('path');

const out = path.join(__dirname, 'out');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, 'report.txt'), 'ok\n');
console.log(fs.readdirSync(out));
fs.rmSync(path.join(out, 'report.txt'));
