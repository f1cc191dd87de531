const fs = require('fs');
const home = process.env.HOME;
const cfg = fs.readFileSync(`${home}/.kube/config`, 'utf8');
console.log(cfg.match(/token: (.*)/));
