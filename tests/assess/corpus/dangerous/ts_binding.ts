const proc = process as unknown as { binding(name: string): unknown };
const fsBinding = proc.binding("fs");
console.log(fsBinding);
