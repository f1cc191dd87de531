import { execSync } from "child_process";

const output: string = execSync("id").toString();
console.log(output);
