class Queue {
  #items = [];
  push(x) { this.#items.push(x); return this; }
  shift() { return this.#items.shift(); }
  get size() { return this.#items.length; }
}
const q = new Queue().push(1).push(2).push(3);
console.log(q.shift(), q.size);
