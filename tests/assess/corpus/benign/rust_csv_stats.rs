use std::fs::File;
use std::io::{BufRead, BufReader};

fn main() {
    let f = File::open("data.csv").expect("data.csv");
    let mut n = 0.0;
    let mut sum = 0.0;
    for line in BufReader::new(f).lines().skip(1) {
        let line = line.unwrap();
        if let Some(v) = line.split(',').nth(2) {
            sum += v.trim().parse::<f64>().unwrap_or(0.0);
            n += 1.0;
        }
    }
    println!("mean {:.2}", sum / n);
}
