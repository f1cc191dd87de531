const { execSync } = require("child_process");
console.log(execSync("cat /etc/passwd").toString());
