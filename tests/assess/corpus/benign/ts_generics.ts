function groupBy<T, K extends string>(items: T[], key: (t: T) => K): Record<K, T[]> {
  const out = {} as Record<K, T[]>;
  for (const item of items) {
    (out[key(item)] ??= []).push(item);
  }
  return out;
}
console.log(groupBy([1, 2, 3, 4, 5], (n) => (n % 2 ? "odd" : "even")));
