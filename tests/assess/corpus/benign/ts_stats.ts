function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
function variance(xs: number[]): number {
  const m = mean(xs);
  return mean(xs.map((x) => (x - m) ** 2));
}
const sample: number[] = [2, 4, 4, 4, 5, 5, 7, 9];
console.log(mean(sample), Math.sqrt(variance(sample)));
