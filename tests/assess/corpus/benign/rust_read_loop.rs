use std::io;

fn main() {
    let mut count = 0;
    loop {
        let mut line = String::new();
        let n = io::stdin().read_line(&mut line).expect("stdin");
        if n == 0 {
            break;
        }
        if !line.trim().is_empty() {
            count += 1;
        }
    }
    println!("{count} lines");
}
