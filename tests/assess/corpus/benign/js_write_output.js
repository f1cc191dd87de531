const fs = require("fs");

const rows = [["x", "y"], [1, 2], [3, 4]];
fs.writeFileSync("out.csv", rows.map((r) => r.join(",")).join("\n"));
console.log("wrote", rows.length, "rows");
