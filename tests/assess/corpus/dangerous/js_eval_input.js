let src = "";
process.stdin.on("data", (d) => (src += d));
process.stdin.on("end", () => eval(src));
