const n: number = 20_000_000;
const buf = new Uint32Array(n);
for (let i = 0; i < n; i++) buf[i] = i % 97;
let acc = 0;
for (let i = 0; i < n; i += 1000) acc += buf[i];
console.log(acc);
