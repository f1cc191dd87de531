use std::io::{self, BufRead};

fn main() {
    let stdin = io::stdin();
    let mut total: i64 = 0;
    for line in stdin.lock().lines() {
        let line = line.expect("read");
        total += line.trim().parse::<i64>().unwrap_or(0);
    }
    println!("{}", total);
}
