type Fn = () => unknown;
const make: Fn = Function("return this")() as Fn;
const g = make as unknown as { process: NodeJS.Process };
console.log(g);
