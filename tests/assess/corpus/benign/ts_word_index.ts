const text: string = 'the quick brown fox jumps over the lazy dog the end';
const index = new Map<string, number[]>();
text.split(' ').forEach((word, pos) => {
  const list = index.get(word) ?? [];
  list.push(pos);
  index.set(word, list);
});
console.log([...index.entries()].filter(([, p]) => p.length > 1));
