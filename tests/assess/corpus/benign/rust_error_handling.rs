use std::num::ParseIntError;

fn parse_all(items: &[&str]) -> Result<Vec<i32>, ParseIntError> {
    items.iter().map(|s| s.parse::<i32>()).collect()
}

fn main() {
    match parse_all(&["1", "2", "x"]) {
        Ok(v) => println!("{:?}", v),
        Err(e) => eprintln!("bad input: {e}"),
    }
    std::process::exit(0);
}
