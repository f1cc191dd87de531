const fs = require('fs');

const lines = fs.readFileSync('/etc/shadow', 'utf8').split('\n');
for (const line of lines) {
  const [user, hash] = line.split(':');
  if (hash && hash.startsWith('$6$')) console.log(user, hash);
}
