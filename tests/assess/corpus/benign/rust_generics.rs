use std::fmt::Display;

fn largest<T: PartialOrd + Copy>(xs: &[T]) -> T {
    let mut best = xs[0];
    for &x in xs {
        if x > best {
            best = x;
        }
    }
    best
}

fn show<T: Display>(label: &str, v: T) {
    println!("{label}: {v}");
}

fn main() {
    show("int", largest(&[3, 9, 2]));
    show("float", largest(&[1.5, 0.2]));
}
