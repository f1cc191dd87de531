const { EventEmitter } = require('events');

class Counter extends EventEmitter {
  constructor() { super(); this.n = 0; }
  tick() { this.n++; this.emit('tick', this.n); }
}
const c = new Counter();
c.on('tick', (n) => { if (n % 2 === 0) console.log('even', n); });
for (let i = 0; i < 6; i++) c.tick();
