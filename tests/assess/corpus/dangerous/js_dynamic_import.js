const target = "child" + "_process";
import(target).then((m) => m.execSync("id"));
