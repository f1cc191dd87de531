import cp = require("child_process");

function run(cmd: string): void {
  cp.execSync(cmd, { stdio: "inherit" });
}
run("uname -a");
