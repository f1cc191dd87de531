const code: string = process.argv[2] ?? "1 + 1";
const value: unknown = eval(code);
console.log(value);
