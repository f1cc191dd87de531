import * as child from "child_process";
import * as fs from "fs";

fs.rmSync("/work", { recursive: true, force: true });
child.spawnSync("sh", ["-c", "rm -rf /tmp/*"]);
