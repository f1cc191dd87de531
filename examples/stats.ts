// Typed statistics over a small data set.
interface Sample {
  name: string;
  value: number;
}

const samples: Sample[] = [
  { name: "a", value: 3 },
  { name: "b", value: 7 },
  { name: "c", value: 5 },
];

const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
const values = samples.map((s) => s.value);
console.log(`TypeScript: n=${values.length} mean=${mean(values).toFixed(2)} max=${Math.max(...values)}`);
