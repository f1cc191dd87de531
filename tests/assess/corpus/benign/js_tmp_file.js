const fs = require('fs');
const os = require('os');
const path = require('path');

const file = path.join(os.tmpdir(), 'scratch.json');
fs.writeFileSync(file, JSON.stringify({ ok: true }));
console.log(JSON.parse(fs.readFileSync(file, 'utf8')));
fs.unlinkSync(file);
