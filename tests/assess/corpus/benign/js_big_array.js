const size = 50_000_000;
const values = new Float64Array(size);
for (let i = 0; i < size; i++) values[i] = Math.sqrt(i);
let sum = 0;
for (const v of values) sum += v;
console.log(sum.toFixed(2));
