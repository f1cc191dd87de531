const fs = require('fs');

let config = { port: 8080, verbose: false };
if (fs.existsSync('config.json')) {
  config = { ...config, ...JSON.parse(fs.readFileSync('config.json', 'utf8')) };
}
console.log(config);
