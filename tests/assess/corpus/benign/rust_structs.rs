#[derive(Debug, Clone, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

impl Point {
    fn norm(&self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }
}

fn main() {
    let mut ps = vec![Point { x: 3.0, y: 4.0 }, Point { x: 1.0, y: 1.0 }];
    ps.sort_by(|a, b| a.norm().partial_cmp(&b.norm()).unwrap());
    println!("{:?}", ps);
}
