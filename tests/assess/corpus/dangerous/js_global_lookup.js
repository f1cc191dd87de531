const key = String.fromCharCode(101, 118, 97, 108);
globalThis[key]("console.log(process.env)");
