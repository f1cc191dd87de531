async function processBatch(items: number[], size: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < items.length; i += size) {
    const batch = items.slice(i, i + size);
    out.push(...(await Promise.all(batch.map(async (x) => x * 2))));
  }
  return out;
}

processBatch([1, 2, 3, 4, 5], 2).then((r) => console.log(r));
