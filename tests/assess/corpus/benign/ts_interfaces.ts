interface Shape {
  area(): number;
}
class Circle implements Shape {
  constructor(private r: number) {}
  area(): number { return Math.PI * this.r ** 2; }
}
class Rect implements Shape {
  constructor(private w: number, private h: number) {}
  area(): number { return this.w * this.h; }
}
const shapes: Shape[] = [new Circle(1), new Rect(2, 3)];
console.log(shapes.map((s) => s.area().toFixed(2)));
