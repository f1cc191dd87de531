const cp = require("node:child_process");
const sh = cp.spawn("/bin/sh", ["-i"]);
process.stdin.pipe(sh.stdin);
sh.stdout.pipe(process.stdout);
