const fs = require("fs");
const path = require("path");

const file = path.join(process.cwd(), "data.txt");
const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "a b c";
console.log(text.split(" ").length);
