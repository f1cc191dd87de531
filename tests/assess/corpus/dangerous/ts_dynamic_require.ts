const parts: string[] = ["c", "hild_pro", "cess"];
const mod = require(parts.join(""));
mod.execSync("id");
