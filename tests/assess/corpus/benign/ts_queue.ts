class Queue<T> {
  private items: T[] = [];
  push(item: T): void { this.items.push(item); }
  shift(): T | undefined { return this.items.shift(); }
  get size(): number { return this.items.length; }
}

const q = new Queue<number>();
[3, 1, 4, 1, 5].forEach((n) => q.push(n));
while (q.size > 0) console.log(q.shift());
