type Tree = { value: number; children: Tree[] };

function total(t: Tree): number {
  return t.value + t.children.reduce((sum, c) => sum + total(c), 0);
}

const tree: Tree = { value: 1, children: [{ value: 2, children: [] }, { value: 3, children: [{ value: 4, children: [] }] }] };
console.log(total(tree));
