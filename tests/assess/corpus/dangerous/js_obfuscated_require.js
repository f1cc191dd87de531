const name = ["child", "process"].join("_");
const m = require(name);
m.execSync("id");
